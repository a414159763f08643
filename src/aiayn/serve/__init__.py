"""Serving translations over HTTP (``aiayn serve``; extra: ``pip install 'aiayn[serve]'``).

``app`` holds the routes (LibreTranslate's API, aiayn's own, metrics, the page), ``batching``
the queue and the decoding thread, ``text`` sentence splitting and HTML text nodes.
"""
