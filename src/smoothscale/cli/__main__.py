"""`python -m smoothscale.cli`: the same command as the `smoothscale` console script."""

from smoothscale.cli.main import cli

cli()
