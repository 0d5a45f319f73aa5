"""The `smoothscale` command line."""
