"""A local Google Cloud Scheduler (v1, HTTP targets) with a virtual clock."""

__version__ = "0.1.0"
