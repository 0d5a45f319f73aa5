"""PySpark jobs over the operator journal, logs and simulator sweeps."""
