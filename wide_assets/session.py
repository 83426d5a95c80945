"""Spark engine selection and lifecycle: embedded Sail, a Spark Connect cluster, or classic JVM Spark."""

from __future__ import annotations

import atexit
import difflib
import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, get_args

from wide_assets import jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession as ClassicSparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession

    SparkSession: TypeAlias = ClassicSparkSession | ConnectSparkSession

__all__ = [
    "ENGINES",
    "ENGINE_VARIABLE",
    "REMOTE_VARIABLE",
    "EngineSettings",
    "activate",
    "engine_from_env",
    "get_spark",
    "is_connect",
    "parse_engine",
    "stop_spark",
]

log = logging.getLogger(__name__)

Engine = Literal["sail", "connect", "classic"]
ENGINES: tuple[str, ...] = get_args(Engine)
_ENGINE_NAMES: Mapping[str, Engine] = MappingProxyType({e: cast(Engine, e) for e in ENGINES})
# The environment variables that choose the engine (for `get_spark()` and the Dagster resources alike)
# and the Spark Connect server's URL.
ENGINE_VARIABLE = "WIDE_ASSETS_ENGINE"
REMOTE_VARIABLE = "WIDE_ASSETS_SPARK_REMOTE"
# The variable the README named before there was one set of names; still read, with its own values,
# and refused when it contradicts ENGINE_VARIABLE.
_FORMER_VARIABLE = "WIDE_ASSETS_ENV"
_FORMER_VALUES: Mapping[str, Engine] = MappingProxyType(
    {"local": "sail", "connect": "connect", "classic": "classic"}
)

# pyspark decides process-wide (not per session) whether `pyspark.sql.functions`, `Window`, ... build
# Connect or classic objects, by looking at this environment variable at call time.
_CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"
# Idle time after which the embedded Sail server drops a session: a year, i.e. never in practice.
EMBEDDED_SESSION_TIMEOUT_SECS = 365 * 24 * 3600

_CLASSIC_CONF: Mapping[str, str] = MappingProxyType(
    {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        # Progress bars would interleave with a run's own log lines.
        "spark.ui.showConsoleProgress": "false",
        **jvm.CODEGEN_CACHE_CONF,
    }
)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class EngineSettings:
    """Which Spark engine to use and how to configure it."""

    engine: Engine = "sail"
    # sc://host:port of a Spark Connect server, only used when engine == "connect".
    remote: str | None = None
    master: str = "local[2]"
    with_delta: bool = True
    # Excluded from the hash (dicts are unhashable) but still part of equality, so the cache stays correct.
    spark_conf: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # Frozen: normalized through object.__setattr__ (" Sail" is "sail" everywhere after this).
        object.__setattr__(self, "engine", parse_engine(self.engine))
        if self.engine == "connect" and not self.remote:
            raise ValueError(
                f"engine 'connect' needs the Spark Connect server's URL: set {REMOTE_VARIABLE}=sc://host:port "
                "(or pass remote='sc://host:port')"
            )
        # Freeze a private copy so a caller mutating its dict cannot change a cached session's key.
        frozen = MappingProxyType({str(k): str(v) for k, v in self.spark_conf.items()})
        object.__setattr__(self, "spark_conf", frozen)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, engine: str | None = None) -> EngineSettings:
        """Build settings from WIDE_ASSETS_ENGINE (unless `engine` is given) / _SPARK_REMOTE /
        _SPARK_MASTER / _SPARK_DELTA."""
        env = os.environ if environ is None else environ
        return cls(
            engine=engine_from_env(env) if engine is None else parse_engine(engine),
            remote=env.get(REMOTE_VARIABLE) or None,
            master=env.get("WIDE_ASSETS_SPARK_MASTER") or "local[2]",
            with_delta=_parse_bool(env.get("WIDE_ASSETS_SPARK_DELTA"), default=True),
        )


def engine_from_env(environ: Mapping[str, str] | None = None) -> Engine:
    """The engine WIDE_ASSETS_ENGINE names (`sail` when unset); the former WIDE_ASSETS_ENV is read too,
    and the two must agree. An unknown value is an error listing the valid ones."""
    env = os.environ if environ is None else environ
    named = {
        variable: _engine_named(env[variable], variable, values)
        for variable, values in ((ENGINE_VARIABLE, _ENGINE_NAMES), (_FORMER_VARIABLE, _FORMER_VALUES))
        if env.get(variable, "").strip()
    }
    if len(set(named.values())) > 1:
        raise ValueError(
            f"{ENGINE_VARIABLE}={env[ENGINE_VARIABLE]!r} and {_FORMER_VARIABLE}={env[_FORMER_VARIABLE]!r} "
            f"name different engines; set only {ENGINE_VARIABLE}"
        )
    return next(iter(named.values()), "sail")


def parse_engine(name: str) -> Engine:
    """`name` as an engine; an unknown one is an error naming the closest and the valid ones."""
    return _engine_named(name, "engine", _ENGINE_NAMES)


def _engine_named(raw: str, what: str, values: Mapping[str, Engine]) -> Engine:
    value = raw.strip().lower()
    if value not in values:
        close = difflib.get_close_matches(value, list(values), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{what}={raw!r} is not an engine{hint}; valid: {', '.join(values)}")
    return values[value]


def _parse_bool(raw: str | None, *, default: bool) -> bool:
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"cannot parse {raw!r} as a boolean")


_lock = threading.RLock()
_sessions: dict[EngineSettings, SparkSession] = {}
# The embedded Sail server shuts down when garbage-collected, after which Connect clients hang in
# retries, so it lives here for as long as any session might use it.
_sail_server: Any = None
_atexit_registered = False


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session (Sail or a remote cluster) rather than classic."""
    # Checking the module avoids importing the Connect client (grpc) just to answer "no".
    return type(spark).__module__.startswith("pyspark.sql.connect")


def activate(spark: SparkSession) -> SparkSession:
    """Point pyspark's process-global Connect/classic dispatch at `spark`'s flavour and return it."""
    if is_connect(spark):
        os.environ[_CONNECT_MODE_ENV] = "1"
    else:
        os.environ.pop(_CONNECT_MODE_ENV, None)
    return spark


def get_spark(settings: EngineSettings | None = None) -> SparkSession:
    """Return the cached session for `settings` (default: from the environment), creating it once."""
    settings = EngineSettings.from_env() if settings is None else settings
    with _lock:
        spark = _sessions.get(settings)
        if spark is None or _is_stopped(spark):
            spark = _create(settings)
            _sessions[settings] = spark
            _register_atexit()
        # The last requested session wins pyspark's global function dispatch; see `activate`.
        return activate(spark)


def stop_spark() -> None:
    """Stop every session this module created, then the embedded Sail server."""
    global _sail_server
    with _lock:
        sessions = list(_sessions.values())
        _sessions.clear()
        # Connect sessions first: they release their server-side state over the wire.
        for spark in sorted(sessions, key=lambda s: not is_connect(s)):
            try:
                spark.stop()
            except Exception:  # shutdown is best effort; one failure must not leak the rest
                log.warning("failed to stop Spark session %r", spark, exc_info=True)
        if _sail_server is not None:
            try:
                _sail_server.stop()
            except Exception:
                log.warning("failed to stop the Sail server", exc_info=True)
            _sail_server = None
        os.environ.pop(_CONNECT_MODE_ENV, None)


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(stop_spark)
        _atexit_registered = True


def _is_stopped(spark: SparkSession) -> bool:
    if is_connect(spark):
        return bool(getattr(spark, "is_stopped", False))
    return getattr(getattr(spark, "_sc", None), "_jsc", None) is None


def _create(settings: EngineSettings) -> SparkSession:
    if settings.engine == "sail":
        return _create_connect(_sail_url(), settings)
    if settings.engine == "connect":
        return _create_connect(cast(str, settings.remote), settings)
    return _create_classic(settings)


def _sail_url() -> str:
    global _sail_server
    if _sail_server is None or not _sail_server.running:
        # Sail logs every session open/close at INFO on stderr; keep it quiet unless asked. An actor
        # that stops with tasks pending warns "aborting N task(s) for SessionManagerActor"
        # (sail_common::actor, ActorRunner::run): at every exit, since each request to the server
        # schedules an idle-session probe (ProbeIdleSession) a session timeout later, never due here.
        # Dropping them loses nothing, so that module speaks only when a task failed (ERROR).
        os.environ.setdefault("RUST_LOG", "warn,sail_common::actor=error")
        # Sail drops a session idle for 15 minutes by default; the embedded server lives and dies with
        # this process, whose cached session must survive a long pause (a test file on the JVM engine,
        # a quiet hour in a notebook) instead of failing with "session ... is not running".
        os.environ.setdefault("SAIL_SPARK__SESSION_TIMEOUT_SECS", str(EMBEDDED_SESSION_TIMEOUT_SECS))
        # In local-cluster mode a failed task is retried, and the retry's scheduler error ("a different
        # attempt has already produced job output") replaced the task's own, e.g. Paimon's overflow
        # text. The merge's errors are deterministic, so a retry could only lose the message.
        os.environ.setdefault("SAIL_CLUSTER__TASK_MAX_ATTEMPTS", "1")
        from pysail.spark import SparkConnectServer

        server = SparkConnectServer("127.0.0.1", 0)
        server.start(background=True)
        _sail_server = server
    host, port = _sail_server.listening_address
    return f"sc://{host}:{port}"


def _create_connect(url: str, settings: EngineSettings) -> SparkSession:
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession

    # create(), not getOrCreate(): the latter hands back whichever Connect session was made first,
    # whatever URL this builder was given.
    spark = ConnectSparkSession.builder.remote(url).create()
    conf = {"spark.sql.session.timeZone": "UTC", **settings.spark_conf}
    for key, value in conf.items():
        try:
            spark.conf.set(key, value)
        except Exception:  # Sail and older servers reject some keys; the session is still usable
            log.warning("Spark Connect server rejected conf %s=%s", key, value, exc_info=True)
    return spark


def _create_classic(settings: EngineSettings) -> SparkSession:
    from pyspark.sql import SparkSession as ClassicSparkSession

    # Python workers must see the driver's packages; the default `python3` on PATH may not have them.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    existing = next((s for k, s in _sessions.items() if k.engine == "classic" and not _is_stopped(s)), None)
    foreign = ClassicSparkSession._instantiatedSession
    if existing is not None or (foreign is not None and not _is_stopped(foreign)):
        # One JVM SparkContext per process: static confs (master, jars, extensions) cannot change.
        raise RuntimeError(
            "a classic Spark session already exists in this process with different settings; "
            "call wide_assets.session.stop_spark() first"
        )

    # Read by the JVM this session starts and a local cluster's workers: such a cluster stays on loopback.
    os.environ.update(jvm.loopback_env(settings.master))
    builder = ClassicSparkSession.builder.master(settings.master).appName("wide_assets")
    delta = jvm.delta_conf() if settings.with_delta else {}
    for key, value in {**_CLASSIC_CONF, **delta, **settings.spark_conf}.items():
        builder = builder.config(key, value)

    # The generic builder refuses to make a classic session while the Connect flag is set (i.e. once a
    # Sail/Connect session exists), so hide the flag just for the JVM start-up.
    with _lock:
        connect_flag = os.environ.pop(_CONNECT_MODE_ENV, None)
        try:
            return builder.getOrCreate()
        except Exception as exc:
            if "spark.jars.packages" in delta:
                exc.add_note(
                    f"with_delta=True and no {jvm.JARS_VARIABLE}: Spark resolves {', '.join(jvm.DELTA_PACKAGES)} "
                    f"from Maven; offline, run `make jars` and set {jvm.JARS_VARIABLE} to its folder"
                )
            raise
        finally:
            if connect_flag is not None:
                os.environ[_CONNECT_MODE_ENV] = connect_flag
