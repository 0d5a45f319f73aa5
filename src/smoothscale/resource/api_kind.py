"""Where the `StreamsApp` kind lives in the Kubernetes API: the coordinates (from the client library's
contract, their one home) and what only the CRD declares (singular, short names, categories).
"""

from typing import Final

from smoothscale.contract.shared_names import API_VERSION, GROUP, KIND, PLURAL, VERSION

# Contract 3's names, re-exported from their one home (the client library's contract).
__all__ = ["API_VERSION", "GROUP", "KIND", "PLURAL", "VERSION"]


LIST_KIND: Final = f"{KIND}List"
SINGULAR: Final = "streamsapp"
SHORT_NAMES: Final = ("sapp",)
# `all` because a StreamsApp owns pods the way a Deployment does: `kubectl get all` should show it.
CATEGORIES: Final = ("all", "smoothscale")
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
