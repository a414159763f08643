"""`aiayn serve`: the models over HTTP."""

from __future__ import annotations

import argparse
import signal
import sys

from ..config import finite_number
from ..errors import UserError
from .common import add_compile_flag, log, read_text


def add_serve(sub) -> None:
    p = sub.add_parser("serve", help="serve translations over HTTP: LibreTranslate's API, "
                                     "aiayn's own and an attention page (needs aiayn[serve])")
    p.add_argument("--checkpoint", action="append", required=True, metavar="[SRC-TGT=]DIR",
                   help="a model to serve, named by its language pair (from `prepare "
                        "--src-lang/--tgt-lang`, or given as en-es=DIR); repeat for more")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: "
                                                       "127.0.0.1)")
    p.add_argument("--port", type=int, default=5000, help="port (default: 5000)")
    p.add_argument("--char-limit", type=int, default=5000, metavar="CHARS",
                   help="characters per request (default: 5000)")
    p.add_argument("--batch-limit", type=int, default=64, metavar="TEXTS",
                   help="texts (q list items) or sentences per request (default: 64)")
    p.add_argument("--max-body-bytes", type=int, default=1_000_000, metavar="BYTES",
                   help="largest request body; larger ones get 413 (default: 1000000)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="a request waits at most this long for its translation (default: 60)")
    p.add_argument("--batch-tokens", type=int, default=4096, metavar="TOKENS",
                   help="source tokens gathered into one decoding round (default: 4096)")
    p.add_argument("--max-wait-ms", type=float, default=10.0, metavar="MS",
                   help="how long a round waits for more requests (default: 10)")
    p.add_argument("--queue-size", type=int, default=256, metavar="REQUESTS",
                   help="requests waiting at most; more get 503 at once (default: 256)")
    p.add_argument("--glossary", metavar="TSV",
                   help="'source term<TAB>target term' lines applied to every request "
                        "(/v1/translate adds its own 'glossary' pairs)")
    p.add_argument("--shortlist", action="append", default=[], metavar="FILE",
                   help="a vocabulary shortlist (`aiayn shortlist`) for the served model whose "
                        "vocabulary it was built with; repeat for several models")
    p.add_argument("--api-keys", metavar="FILE",
                   help="require an api_key from this file (one key a line); others get 403")
    p.add_argument("--req-limit", type=int, default=0, metavar="PER_MINUTE",
                   help="requests per minute per API key or client address; 0 = no limit")
    from ..decode.options import DecodeOptions
    DecodeOptions.add_flags(p, ("beam",), help={"beam": "beam size of LibreTranslate's routes "
                                                        "and the default of /v1/translate's"})
    p.add_argument("--beam-limit", type=int, default=16, metavar="N",
                   help="the largest beam a /v1/translate request may ask for; a larger one "
                        "gets 400 (default: 16)")
    p.add_argument("--int8", action="store_true", help="int8 linear layers (CPU)")
    add_compile_flag(p)
    p.add_argument("--keep-freed-mib", type=int, default=256, metavar="MIB",
                   help="freed memory the process keeps for reuse before returning it to the "
                        "system: a bound on how far its memory grows past what decoding holds "
                        "(default: 256, at most 2047; translate and train keep 1024)")
    p.set_defaults(command_fn=serve_command)


def _served_models(specs: list[str], int8: bool, compile: bool | None = None):
    from ..checkpoint import Checkpoint
    from ..serve.app import Model
    from ..translate import Translator
    models = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = "", spec
        checkpoint = Checkpoint.open(path)
        if name:
            source, dash, target = name.partition("-")
            if not (dash and source and target):
                raise UserError(f"--checkpoint {spec!r}: name the pair as SRC-TGT=DIR, "
                                "e.g. en-es=runs/en-es")
        else:
            languages = checkpoint.languages
            if languages is None:
                raise UserError(f"--checkpoint {path}: its language pair is unknown; name it "
                                f"as en-es={path} (or prepare with --src-lang/--tgt-lang)")
            source, target = languages["source"], languages["target"]
        translator = Translator.load(checkpoint, int8=int8, compile=compile)
        translator.name_pair(source, target)  # (the pair the server answers for)
        models.append(Model(source, target, translator))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise UserError(f"two --checkpoint models serve the same pair ({', '.join(names)})")
    return models


def _attach_shortlist(models, path: str) -> None:
    """Give the shortlist at ``path`` to every served model whose vocabulary it was built
    with; a shortlist that fits none is an error."""
    from ..decode.shortlist import Shortlist
    shortlist = Shortlist.load(path)
    fitting = [m for m in models if shortlist.fits(m.translator.tokenizer.fingerprint())]
    if not fitting:
        raise UserError(f"--shortlist {path} was built for none of the served models' "
                        "vocabularies; build it with one of their checkpoints")
    for model in fitting:
        model.translator.shortlist = shortlist


def _check_address(host: str, port: int) -> None:
    """A one-line UserError where uvicorn could not listen on ``host``:``port``: found by
    binding a socket there as uvicorn will (it would log the error and exit)."""
    import errno
    import socket
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port}: a port is a number from 0 to 65535")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror:
        raise UserError(f"--host {host}: not an address, nor a name this machine resolves; "
                        "use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)"
                        ) from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise UserError(f"--port {port}: another program listens on {host}:{port}; "
                                "choose another --port or stop that program") from None
            if err.errno == errno.EADDRNOTAVAIL:
                raise UserError(f"--host {host}: not an address of this machine; use "
                                "127.0.0.1 (this machine only) or 0.0.0.0 (every interface)"
                                ) from None
            if err.errno == errno.EACCES:
                raise UserError(f"--port {port}: this user may not listen on ports below "
                                "1024; choose one above 1023") from None
            raise UserError(f"--host {host} --port {port}: cannot listen there "
                            f"({err.strerror})") from None


def serve_command(args: argparse.Namespace) -> None:
    import logging

    from ..errors import require
    for module in ("starlette", "prometheus_client", "multipart"):
        require(module, "serve", "serve")
    uvicorn = require("uvicorn", "serve", "serve")

    from ..glossary import Glossary
    from ..serve.app import Settings, create_app
    keys = None
    if args.api_keys:
        keys = frozenset(line.strip() for line in
                         read_text(args.api_keys, "--api-keys").splitlines() if line.strip())
        if not keys:
            raise UserError(f"--api-keys {args.api_keys}: the file holds no key")
    for flag in ("char_limit", "batch_limit", "max_body_bytes", "batch_tokens", "queue_size",
                 "beam", "beam_limit"):
        if getattr(args, flag) < 1:
            raise UserError(f"--{flag.replace('_', '-')} must be at least 1")
    if args.beam > args.beam_limit:
        raise UserError(f"--beam ({args.beam}) exceeds --beam-limit ({args.beam_limit}); "
                        "raise --beam-limit or lower --beam")
    if not (finite_number(args.timeout) and finite_number(args.max_wait_ms)):
        raise UserError("--timeout and --max-wait-ms must be finite numbers")
    if args.timeout <= 0 or args.max_wait_ms < 0 or args.req_limit < 0:
        raise UserError("--timeout must be positive; --max-wait-ms and --req-limit >= 0")
    settings = Settings(char_limit=args.char_limit, batch_limit=args.batch_limit,
                        max_body_bytes=args.max_body_bytes, timeout=args.timeout,
                        batch_tokens=args.batch_tokens, max_wait_ms=args.max_wait_ms,
                        queue_size=args.queue_size, api_keys=keys, req_limit=args.req_limit,
                        beam=args.beam, beam_limit=args.beam_limit,
                        glossary=Glossary.read(args.glossary) if args.glossary else None)
    if args.keep_freed_mib < 0:
        raise UserError("--keep-freed-mib must be >= 0")
    _check_address(args.host, args.port)  # before the models load, which takes a while
    from ..runtime.cpu import reuse_freed_memory
    reuse_freed_memory(args.keep_freed_mib << 20)  # before the models load: the first call sets it
    models = _served_models(args.checkpoint, args.int8, args.compile)
    for path in args.shortlist:
        _attach_shortlist(models, path)
    app = create_app(models, settings)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    log(f"serving {', '.join(app.state.service.models)} on http://{args.host}:{args.port}/")
    # uvicorn answers the requests in flight on SIGTERM or Ctrl-C, then raises the signal again
    # to the handler it found; this one notes it, so that a clean stop exits with status 0
    stopped: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stopped.append(signum))
    uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning",
                timeout_graceful_shutdown=int(args.timeout))
    if stopped:
        log(f"stopped by {signal.Signals(stopped[0]).name}; every request in flight was "
             "answered")
