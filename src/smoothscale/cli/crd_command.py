"""`smoothscale crd`: print or write the StreamsApp CustomResourceDefinition.

The CRD is generated from the resource models, so this command is how `crds/streamsapp.yaml` and the Helm
chart's copy, `charts/smoothscale/crds/streamsapp.yaml`, are refreshed after a model change (both in one
run, `--output` given twice), and how an installation gets the CRD that matches the operator it runs.
"""

from pathlib import Path

import click


@click.command("crd")
@click.option(
    "--output",
    "-o",
    "outputs",
    multiple=True,
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the YAML to this file instead of standard output (repeatable).",
)
def crd_command(outputs: tuple[Path, ...]) -> None:
    """Generate the StreamsApp CustomResourceDefinition as YAML."""
    # Imported here so that `smoothscale --help` does not build pydantic models it will not use.
    from smoothscale.resource.crd import crd_yaml  # noqa: PLC0415

    text = crd_yaml()
    if not outputs:
        click.echo(text, nl=False)
    for output in outputs:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
