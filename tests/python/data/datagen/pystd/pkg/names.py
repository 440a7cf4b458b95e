"""Frob helpers (test fixture)."""


def widget_name(widget, default="anonymous"):
    """Return the display name of a widget."""
    return default
