"""The page side of the app: ui/core (shared), ui/recordings (saved runs), then one package per feature."""
