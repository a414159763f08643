"""Serving translations over HTTP (``aiayn serve``; extra: ``pip install 'aiayn[serve]'``).

``app`` assembles the application from ``libretranslate``'s and ``native``'s routes over one
``service`` (the models and their ``batching`` queue and decoding thread) and ``http``'s
plumbing; ``text`` splits sentences and finds HTML text nodes.
"""
