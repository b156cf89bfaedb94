"""Delivery: dispatchers turn an attempt into a request, transports send it (real HTTP through
libcurl's event loop or http.client, in-process WSGI/ASGI apps), Pub/Sub publishers, and the
OIDC/OAuth tokens requests carry."""
