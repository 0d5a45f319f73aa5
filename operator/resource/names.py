"""Where the `StreamsApp` kind lives in the Kubernetes API.

One home for these strings: the CRD generator, kopf's handler registration, the API emulator used in tests
and the CLI must all agree, and a typo in any one of them fails only at run time against a cluster.
"""

from typing import Final

GROUP: Final = "smoothscale.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "StreamsApp"
LIST_KIND: Final = "StreamsAppList"
PLURAL: Final = "streamsapps"
SINGULAR: Final = "streamsapp"
SHORT_NAMES: Final = ("sapp",)
# `all` because a StreamsApp owns pods the way a Deployment does: `kubectl get all` should show it.
CATEGORIES: Final = ("all", "smoothscale")
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
