"""The pure planning layer: snapshot and plan models, the assignor, and nothing that talks to Kubernetes."""
