"""`python -m smoothscale.pipeline ...` and `spark-submit pipeline/__main__.py ...`: see `entry`."""

from smoothscale.pipeline.entry import main

if __name__ == "__main__":
    main()
