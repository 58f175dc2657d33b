"""The tabs as laid out: each composes the features' pieces (``ui/page``, ``ui/fork``, …) into one tab's layout."""
