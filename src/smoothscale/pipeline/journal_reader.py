"""The operator's JSON-lines journal (`smoothscale.operator.journal` documents the record shapes) as a
DataFrame, read with one explicit schema so that every kind's fields are columns and nothing is inferred.

A line that is not a JSON object with `ts`, `kind` and `app` is malformed: counted per file and reported,
never fatal (a journal cut off by a crash ends in half a line).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

_TASK_POD = T.StructType([T.StructField("task", T.StringType()), T.StructField("pod", T.StringType())])
_MOVE = T.StructType([T.StructField(name, T.StringType()) for name in ("task", "from", "to")])

SCHEMA = T.StructType(
    [
        T.StructField("ts", T.StringType()),
        T.StructField("kind", T.StringType()),
        T.StructField("namespace", T.StringType()),
        T.StructField("app", T.StringType()),
        T.StructField("generation", T.LongType()),
        T.StructField("reason", T.StringType()),
        T.StructField("stable", T.BooleanType()),
        T.StructField("durationSeconds", T.DoubleType()),
        T.StructField(
            "stats",
            T.StructType(
                [
                    T.StructField("crossRackCost", T.DoubleType()),
                    T.StructField("targetCrossRackCost", T.DoubleType()),
                    T.StructField("activeImbalance", T.DoubleType()),
                    T.StructField("movedActives", T.LongType()),
                    T.StructField("warmups", T.LongType()),
                ]
            ),
        ),
        T.StructField(
            "followup",
            T.StructType(
                [T.StructField("reason", T.StringType()), T.StructField("probeAfterSeconds", T.DoubleType())]
            ),
        ),
        T.StructField("warmups", T.ArrayType(_TASK_POD)),
        T.StructField("clients", T.LongType()),
        T.StructField("tasks", T.LongType()),
        T.StructField("active", T.LongType()),
        T.StructField("standby", T.LongType()),
        T.StructField("warmup", T.LongType()),
        T.StructField("moves", T.ArrayType(_MOVE)),
        T.StructField("task", T.StringType()),
        T.StructField("from", T.StringType()),
        T.StructField("to", T.StringType()),
        T.StructField("step", T.StringType()),
        T.StructField("pod", T.StringType()),
        T.StructField("zone", T.StringType()),
        T.StructField("pods", T.LongType()),
        T.StructField("lagTotal", T.DoubleType()),
        T.StructField(
            "warmupLags",
            T.ArrayType(
                T.StructType(
                    [
                        T.StructField("task", T.StringType()),
                        T.StructField("pod", T.StringType()),
                        T.StructField("lag", T.DoubleType()),
                    ]
                )
            ),
        ),
    ]
)


def parse_journal(lines: DataFrame) -> DataFrame:
    """`lines` (file, line, value) -> the records (file, line, `ts` as a timestamp, SCHEMA's other fields)
    and `malformed` (boolean): rows where that is true carry only file and line."""
    record = F.from_json(F.col("value"), SCHEMA, {"mode": "PERMISSIVE"})
    parsed = lines.where(F.trim(F.col("value")) != "").select("file", "line", record.alias("r"))
    ts = F.to_timestamp(F.col("r.ts"))
    malformed = F.col("r").isNull() | ts.isNull() | F.col("r.kind").isNull() | F.col("r.app").isNull()
    fields = [F.col(f"r.{field.name}").alias(field.name) for field in SCHEMA.fields if field.name != "ts"]
    return parsed.select("file", "line", ts.alias("ts"), *fields, malformed.alias("malformed"))
