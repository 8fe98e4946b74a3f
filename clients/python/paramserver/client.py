"""The trainer's client: the master (dataset, tasks), its Coordination service (membership, cluster
map, placement, locks) and the pservers (init, push, pull). No etcd client. Not thread-safe: one
training thread calls it (a background thread keeps the membership alive; pull_rows may also be
called from paramserver.torch's prefetch thread)."""

from __future__ import annotations

import concurrent.futures
import logging
import platform
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Generator, Iterable, Iterator, List, Mapping, MutableMapping, Optional,
                    Sequence, Tuple, TypeVar, Union)

import grpc
import numpy as np
import numpy.typing as npt

from . import elastic, errors, routing
from ._stubs import co, co_grpc, ma, ma_grpc, optimizer_pb2, pb, pb_grpc, placement_pb2, tensor_pb2
from .errors import CallOrderError, ParamServerError

__all__ = ["Client", "Tls", "PendingPush", "optimizer", "dense_spec", "ASYNC", "SYNC", "BOUNDED_STALENESS",
           "co", "ma", "pb", "placement_pb2", "tensor_pb2", "optimizer_pb2"]

log = logging.getLogger("paramserver")
ASYNC, SYNC, BOUNDED_STALENESS = pb.ASYNC, pb.SYNC, pb.BOUNDED_STALENESS
OPTIONS: List[Tuple[str, Any]] = [("grpc.max_send_message_length", 64 << 20),
                                  ("grpc.max_receive_message_length", 64 << 20)]
TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
WAIT_HOLD_MS = 1000  # as the Java trainer's PassRunner
BLOCK_SIZE = 262144  # elements per block, the Java trainer's default (1 MiB)
LOOK_AGAIN_S = 0.5  # waiting for a placement epoch, the cluster map is looked at again this often

FloatArray = npt.NDArray[np.float32]
Values = MutableMapping[str, FloatArray]  # {name: flat float32 array}, written in place
Gradients = Mapping[str, "npt.ArrayLike"]
SparseGradients = Mapping[str, Tuple["npt.ArrayLike", "npt.ArrayLike"]]  # {table: (row ids, [n, width])}
Planned = List[Tuple[int, pb.PushGradientsRequest]]
T = TypeVar("T")


def optimizer(kind: str = "sgd", learning_rate: float = 0.1, momentum: float = 0.0, weight_decay: float = 0.0,
              beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 0.0, rho: float = 0.0,
              initial_accumulator: float = 0.0, clip_value: float = 0.0,
              clip_norm: float = 0.0) -> optimizer_pb2.OptimizerConfig:
    """An OptimizerConfig (run on the pservers) built as the Java trainer builds it from its
    settings, defaults included, so that a Python and a Java trainer of one job send equal specs.
    kind: sgd, momentum, nesterov, adam, adamw, adagrad, rmsprop or adadelta."""
    K = optimizer_pb2.OptimizerConfig
    kinds = {"sgd": K.SGD, "momentum": K.SGD, "nesterov": K.SGD, "adam": K.ADAM, "adamw": K.ADAMW,
             "adagrad": K.ADAGRAD, "rmsprop": K.RMSPROP, "adadelta": K.ADADELTA}
    if kind not in kinds:
        raise ValueError("optimizer %r is not one of %s" % (kind, ", ".join(kinds)))
    if kind in ("momentum", "nesterov") and momentum == 0:
        momentum = 0.9
    return K(kind=kinds[kind], learning_rate=learning_rate, momentum=momentum, nesterov=kind == "nesterov",
             weight_decay=weight_decay, beta1=beta1, beta2=beta2, epsilon=epsilon, rho=rho,
             initial_accumulator=initial_accumulator, clip_value=clip_value, clip_norm=clip_norm,
             schedule=optimizer_pb2.LearningRateSchedule(gamma=0.1))


def dense_spec(name: str, shape: Sequence[int], block_size: int = BLOCK_SIZE,
               optimizer_config: Optional[optimizer_pb2.OptimizerConfig] = None) -> pb.ParameterSpec:
    """The ParameterSpec of a dense float32 parameter."""
    return pb.ParameterSpec(name=name, shape=list(shape), dtype=tensor_pb2.FLOAT32, block_size=block_size,
                            optimizer=optimizer_config or optimizer())


@dataclass(frozen=True)
class Tls:
    """TLS for every channel the client opens (the servers' `grpc.server.security.*`): `ca` the PEM
    file of the CA certificates the servers' certificates are checked against (None: the system's);
    `certificate` and `private_key` PEM files of a client certificate, for servers that require one
    (mutual TLS); `authority` the host name to check the certificates against instead of the
    address dialled (as the Java trainers' paramserver.grpc-client.tls.authority-override)."""

    ca: Optional[str] = None
    certificate: Optional[str] = None
    private_key: Optional[str] = None
    authority: Optional[str] = None

    def __post_init__(self) -> None:
        if (self.certificate is None) != (self.private_key is None):
            raise ValueError("Tls: a client certificate needs both certificate and private_key")

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: Optional[str]) -> Optional[bytes]:
            if path is None:
                return None
            try:
                with open(path, "rb") as f:
                    return f.read()
            except OSError as e:
                raise ValueError("Tls: cannot read %s: %s" % (path, e)) from e
        return grpc.ssl_channel_credentials(read(self.ca), read(self.private_key), read(self.certificate))

    def options(self) -> List[Tuple[str, Any]]:
        return [("grpc.ssl_target_name_override", self.authority)] if self.authority else []


@dataclass(frozen=True)
class PendingPush:
    """A push sent with push(wait=False): `step` its step, `answers` the Future of the pservers'
    answers (set once every pserver acknowledged). Client.complete() waits for it and writes the new
    values into `into`; complete it before the next push (one step in flight keeps exactly-once)."""

    step: int
    answers: concurrent.futures.Future[List[pb.PushGradientsResponse]]
    into: Optional[Values] = field(default=None, repr=False)
    planned: Tuple[Tuple[int, pb.PushGradientsRequest], ...] = field(default=(), repr=False)

    def done(self) -> bool:
        """Whether every pserver answered (complete() would not wait)."""
        return self.answers.done()

    def rows(self) -> Dict[str, Tuple["npt.NDArray[np.int64]", FloatArray]]:
        """{table: (ids, values [n, width])} the answers carry (pushed with return_rows); waits."""
        out: Dict[str, Tuple["npt.NDArray[np.int64]", FloatArray]] = {}
        for a in self.answers.result():
            for r in a.sparse_rows:
                ids = np.asarray(r.row_ids, np.int64)
                values = np.frombuffer(r.data, dtype="<f4").reshape(len(ids), -1).astype(np.float32)
                if r.name in out:
                    ids, values = np.concatenate([out[r.name][0], ids]), np.concatenate([out[r.name][1], values])
                out[r.name] = (ids, values)
        return out


class Client:
    """Connects lazily. Order: join() -> init_parameters() -> set_dataset()/tasks(), push()/pull().

    masters: "host:port" or a list of them (leader and standbys); on NOT_LEADER or UNAVAILABLE the
    client tries the ErrorInfo's "leader" address, else the next one, for up to failover_s seconds.
    tls: a Tls for TLS channels (default: plaintext).

    Elastic jobs (docs/explanation/elastic.md): requests are routed by the job's committed placement
    map (ClusterMap.placement, from the Attend stream; without one, the initial map of the pserver
    count, which is the fixed rule). A request a pserver refuses with MOVED (nothing of it applied)
    waits, at most timeout_s, until the map reaches the epoch named or that move is rolled back, is
    re-split by the map and each piece resent with the same identity, `origin` and a part of its own.
    """

    def __init__(self, masters: Union[str, Sequence[str]], trainer_id: str = "", timeout_s: float = 10.0,
                 failover_s: float = 60.0, retry_s: float = 300.0, tls: Optional[Tls] = None) -> None:
        self.masters = [m.strip() for m in (masters.split(",") if isinstance(masters, str) else masters)]
        if not self.masters or not all(self.masters):
            raise ValueError("masters must name at least one host:port, got %r" % (masters,))
        self.trainer_id, self.session, self.tls = trainer_id, uuid.uuid4().hex, tls
        self.timeout_s, self.failover_s, self.retry_s = timeout_s, failover_s, retry_s
        self.joined: Optional[co.JoinResponse] = None
        self.placement: Optional[co.Placement] = None
        self.cluster_map: Optional[co.ClusterMap] = None
        self.values: Optional[Values] = None
        self.step, self.current_pass, self.loss_every_records = 0, 0, 0
        self._leader = 0
        self._channels: Dict[str, grpc.Channel] = {}
        self._channel_lock = threading.Lock()
        self._held: Dict[int, ma.Task] = {}
        self._cond, self._closed = threading.Condition(), threading.Event()
        self._sender = concurrent.futures.ThreadPoolExecutor(1, "paramserver-push")
        self._attend: Optional[threading.Thread] = None
        self._call: Any = None
        self._stop: Optional[threading.Event] = None
        self._init_id: Optional[str] = None
        self._join_request: Optional[co.JoinRequest] = None
        self._map: Optional[routing.SlotMap] = None
        self._plans: Dict[Tuple[int, bool], Dict[int, List[List[co.BlockPlacement]]]] = {}
        self._parts = elastic.ResentParts()
        self._widths: Dict[str, int] = {}
        self.moved_requests = 0  # requests refused with MOVED and resent (re-split)

    # ---- plumbing ----
    def _channel(self, address: str) -> grpc.Channel:
        with self._channel_lock:  # the prefetch thread of paramserver.torch reads rows too
            return self._open(address)

    def _open(self, address: str) -> grpc.Channel:
        if address not in self._channels:
            if self.tls is None:
                self._channels[address] = grpc.insecure_channel(address, options=OPTIONS)
            else:
                self._channels[address] = grpc.secure_channel(address, self.tls.credentials(),
                                                              options=OPTIONS + self.tls.options())
        return self._channels[address]

    def _require(self, method: str, joined: bool = True, initialised: bool = False) -> None:
        if self._closed.is_set():
            raise CallOrderError("%s() after close(): make a new Client" % method)
        if joined and self.joined is None:
            raise CallOrderError("%s() before join(): call client.join(parameters) first" % method)
        if initialised and self.values is None:
            raise CallOrderError("%s() before init_parameters(): call client.init_parameters(values) first" % method)

    def _job(self) -> co.JoinResponse:
        if self.joined is None:
            raise CallOrderError("the client has not joined a job: call client.join(parameters) first")
        return self.joined

    def _master(self, stub: Callable[[grpc.Channel], Any], method: str, request: Any, what: str,
                timeout_s: Optional[float] = None, retry: Tuple[str, ...] = ("NOT_LEADER",)) -> Any:
        """One call to the leader master, failing over (NOT_LEADER, UNAVAILABLE) for failover_s."""
        deadline, delay, tried = time.monotonic() + self.failover_s, 0.1, 0
        while True:
            address = self.masters[self._leader]
            try:
                call = getattr(stub(self._channel(address)), method)
                return call(request, timeout=timeout_s or self.timeout_s)
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, "%s (master %s)" % (what, address))
                if err.reason not in retry and err.code not in TRANSIENT or time.monotonic() > deadline:
                    raise err
                self._next_master(err.metadata.get("leader"))
                tried += 1
                if tried % len(self.masters) == 0 or err.reason == "NOT_JOINED":
                    time.sleep(delay)
                    delay = min(2 * delay, 2.0)

    def _next_master(self, leader: Optional[str] = None) -> None:
        if leader and leader not in self.masters:
            self.masters.append(leader)
        self._leader = self.masters.index(leader) if leader else (self._leader + 1) % len(self.masters)

    def _coord(self, method: str, request: Any, what: str) -> Any:
        return self._master(co_grpc.CoordinationStub, method, request, what,
                            retry=("NOT_LEADER", "NOT_JOINED"))

    # ---- membership ----
    def join(self, parameters: Iterable[pb.ParameterSpec] = (), mode: int = ASYNC, staleness: int = 0,
             endpoint: str = "", client: Optional[str] = None) -> co.JoinResponse:
        """Joins the job with the model `parameters` (ParameterSpecs; empty: the job's model as it is),
        keeps an Attend stream open on a background thread, and fetches the block placement.
        A model that differs from the job's raises ModelMismatch (the master names the difference)."""
        self._require("join", joined=False)
        if self.joined is not None:
            raise CallOrderError("join() twice: one Client joins once")
        self._join_request = co.JoinRequest(
            trainer_id=self.trainer_id, session=self.session, parameters=list(parameters), mode=mode,  # type: ignore[arg-type]
            staleness=staleness, endpoint=endpoint,
            client=client or "python %s / paramserver-py" % platform.python_version())
        joined: co.JoinResponse = self._coord("Join", self._join_request, "joining the job")
        self.joined = joined
        self.trainer_id = joined.trainer_id
        self._attend = threading.Thread(target=self._attend_loop, name="paramserver-attend", daemon=True)
        self._attend.start()
        # the placement needs the pserver count the job wants (set once a pserver started)
        self._wait(lambda: self.cluster_map is not None and self.cluster_map.pservers_desired > 0,
                   "a cluster map with pservers_desired > 0 (Attend)")
        placement: co.Placement = self._coord("GetPlacement", co.GetPlacementRequest(trainer_id=self.trainer_id),
                                              "getting the placement")
        self.placement = placement
        with self._cond:
            self._map = routing.SlotMap.initial(placement.blocks, placement.pservers)
        self._widths = {t.name: t.width for t in placement.sparse_tables}
        log.info("joined job %s as %s: %d parameters, %d pservers, mode %s, %r", joined.job,
                 self.trainer_id, len(joined.parameters), placement.pservers,
                 pb.TrainingMode.Name(joined.mode), self._routing())
        return joined

    # ---- elastic placement ----
    def _routing(self) -> routing.SlotMap:
        """The SlotMap requests are planned by: the newest committed map the cluster map carried,
        else the initial map of the Placement's pserver count. One request uses one map throughout."""
        with self._cond:
            m = self.cluster_map
            if self._map is None:
                raise CallOrderError("the client has no placement yet: call client.join(parameters) first")
            if m is not None and m.HasField("placement") and m.placement.epoch > self._map.epoch:
                try:
                    self._map = routing.SlotMap.from_proto(m.placement)
                    log.info("routing by placement epoch %d: %r", self._map.epoch, self._map)
                except ValueError as e:
                    log.error("cannot route by placement epoch %d: %s", m.placement.epoch, e)
            return self._map

    def _plan(self, sync: bool = False) -> Dict[int, List[List[co.BlockPlacement]]]:
        """{pserver: [group, ...]} of the dense blocks under the current map (cached per epoch)."""
        m = self._routing()
        key = (m.epoch, sync)
        if key not in self._plans:
            assert self.placement is not None
            self._plans = {k: v for k, v in self._plans.items() if k[0] == m.epoch}
            self._plans[key] = routing.plan(self.placement.blocks, m.pservers, sync=sync, slot_map=m)
        return self._plans[key]

    def _settle(self, moved: errors.ParamServerError, refusals: int) -> bool:
        """Waits, at most timeout_s, until the request `moved` refused may be re-split: the map
        routes by the epoch it names, or that move was rolled back (none of that epoch in progress
        and the committed epoch below it). The second and later refusals of one request first wait
        a growing backoff, so a placement that does not settle is never spun on."""
        if refusals:
            time.sleep(min(0.05 * 2 ** refusals, 2.0))
        epoch = _number(moved.metadata.get("epoch"), 0)
        deadline = time.monotonic() + self.timeout_s
        with self._cond:
            while True:
                current = self._routing()
                if current.epoch >= epoch:
                    return True
                m = self.cluster_map
                committed = m.placement.epoch if m is not None and m.HasField("placement") else 0
                moving = m is not None and m.HasField("placement_move") and m.placement_move.epoch == epoch
                if committed < epoch and not moving:
                    log.info("%s, but that move was rolled back: routing by epoch %d", moved, current.epoch)
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("%s, but no placement epoch %d came within %.1f s: resending by %r",
                                moved, epoch, self.timeout_s, current)
                    return False
                self._cond.wait(min(left, LOOK_AGAIN_S))

    def _send(self, ps: int, method: str, request: Any, what: str, first: Optional[grpc.Future[Any]] = None,
              refusals: int = 0) -> Any:
        """_call_ps; a push or pull refused with MOVED is re-split by the map and its pieces sent
        (each until it is answered, again so if refused again); the answer is the pieces' together."""
        try:
            return self._call_ps(ps, method, request, what, first)
        except errors.Moved as moved:
            if method not in ("PushGradients", "PullParameters"):
                raise
            self.moved_requests += 1
            self._settle(moved, refusals)
            m = self._routing()
            push = method == "PushGradients"
            pieces: Sequence[Tuple[int, Any]] = (elastic.split_push(ps, request, m, self._parts.next) if push
                                                 else elastic.split_pull(request, m))
            log.info("%s: resending it as %d piece(s) by placement epoch %d", moved, len(pieces), m.epoch)
            answers = [self._send(p, method, piece, what, refusals=refusals + 1) for p, piece in pieces]
            return elastic.merge(answers, pb.PushGradientsResponse if push else pb.PullParametersResponse, push)

    def _heartbeats(self, stop: threading.Event) -> Iterator[co.AttendRequest]:
        yield co.AttendRequest(trainer_id=self.trainer_id, session=self.session)
        while not stop.wait(max(self._job().heartbeat_ms, 50) / 1000.0):
            yield co.AttendRequest()

    def _attend_loop(self) -> None:
        delay, first = 0.2, True
        while not self._closed.is_set():
            stop = self._stop = threading.Event()
            try:
                if not first:  # a reconnect: join again (same id and session), then attend again
                    self._coord("Join", self._join_request, "joining the job again")
                first = False
                stub = co_grpc.CoordinationStub(self._channel(self.masters[self._leader]))
                self._call = stub.Attend(self._heartbeats(stop))
                for cluster_map in self._call:
                    with self._cond:
                        self.cluster_map = cluster_map
                        self._cond.notify_all()
                    delay = 0.2
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, "attending")
                if not self._closed.is_set():
                    log.warning("%s; reconnecting", err)
                    if err.reason == "NOT_LEADER" or err.code in TRANSIENT:
                        self._next_master(err.metadata.get("leader"))
            except ParamServerError as err:
                log.warning("re-joining failed: %s; retrying", err)
            finally:
                stop.set()
            self._closed.wait(delay)
            delay = min(2 * delay, 5.0)

    def _wait(self, condition: Callable[[], bool], what: str, timeout_s: Optional[float] = None) -> None:
        with self._cond:
            if not self._cond.wait_for(condition, timeout_s or self.retry_s):
                raise ParamServerError("timed out after %.0f s waiting for %s" % (timeout_s or self.retry_s, what))

    # ---- pservers ----
    def _pserver(self, ps: int) -> Any:
        """The stub of pserver `ps` once it is registered. One that is not and owns nothing in the
        committed map (emptied by a shrink, then shut down) is taken as having answered MOVED at the
        committed epoch: the request goes to the owners the map names."""
        def address() -> Optional[str]:
            m = self.cluster_map
            return next((p.address for p in m.pservers if p.index == ps and p.address), None) if m else None

        def emptied() -> bool:
            r = self._routing()
            return r.epoch > 0 and not r.owns_anything(ps)
        self._wait(lambda: address() is not None or emptied(), "pserver %d to register" % ps)
        with self._cond:
            a = address()
            if a is None:
                epoch = self._routing().epoch
                raise errors.Moved("pserver %d is not registered and owns nothing at placement epoch %d"
                                   % (ps, epoch), "MOVED", None, {"owner": "-1", "epoch": str(epoch)})
        return pb_grpc.ParameterServerStub(self._channel(a))

    def _call_ps(self, ps: int, method: str, request: Any, what: str, first: Optional[grpc.Future[Any]] = None) -> Any:
        """Calls pserver `ps` until it answers, retrying transient failures with the same request
        (pushes carry their identity, so a retried push is applied once); re-initialises a pserver
        that lost its state. `first` is the future of a first attempt already sent."""
        deadline, delay = time.monotonic() + self.retry_s, 0.1
        while True:
            try:
                if first is not None:
                    f, first = first, None
                    return f.result()
                return getattr(self._pserver(ps), method)(request, timeout=self.timeout_s)
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, "%s pserver %d" % (what, ps))
                if err.reason == "NOT_INITIALIZED" and self.values is not None and method != "InitParameters":
                    log.warning("%s: pserver %d lost its state; re-initialising it", err, ps)
                    self._init_one(ps, self._init_id or self.session)
                    continue
                if err.code not in TRANSIENT and err.reason not in ("SYNC_ABORTED", "SHUTTING_DOWN", "OVERLOADED"):
                    raise err
                if time.monotonic() > deadline:
                    raise err
                if err.reason == "OVERLOADED":
                    # refused at a server limit before anything was done: back off at least the hint
                    log.debug("%s; retrying", err)
                    time.sleep(max(delay, int(err.metadata.get("retry_after_ms", "0")) / 1000.0))
                else:
                    log.warning("%s; retrying", err)
                    time.sleep(delay)
                delay = min(2 * delay, 5.0)

    def _all(self, planned: Sequence[Tuple[int, Any]], method: str, what: str) -> List[Any]:
        """Sends (pserver, request) pairs concurrently; returns the answers in order."""
        futures: List[Optional[grpc.Future[Any]]] = []
        for ps, req in planned:
            try:
                futures.append(getattr(self._pserver(ps), method).future(req, timeout=self.timeout_s))
            except (grpc.RpcError, errors.Moved):
                futures.append(None)
        return [self._send(ps, method, req, what, first=f) for (ps, req), f in zip(planned, futures)]

    # ---- initialisation ----
    def init_parameters(self, values: Values, timeout_s: Optional[float] = None) -> bool:
        """Makes sure every pserver is initialised. The trainer granted the INIT_PARAMETERS lock sends
        each pserver the `values` ({name: flat float32 array}) of the blocks it owns, FinishInit, and
        releases the lock as done; the others wait until it is done. `values` stays the client's
        latest values (a pserver that loses its state is re-initialised with them). True when this
        trainer initialised them."""
        self._require("init_parameters")
        missing = [p.name for p in self._job().parameters if not p.sparse and p.name not in values]
        if missing:
            raise ValueError("init_parameters(): no values for %s" % ", ".join(missing))
        self.values, self._init_id = values, None
        req = co.AcquireLockRequest(trainer_id=self.trainer_id, lock=co.INIT_PARAMETERS)
        deadline, logged = time.monotonic() + (timeout_s or self.retry_s), 0.0
        while True:
            r: co.AcquireLockResponse = self._coord("AcquireLock", req, "taking the init lock")
            if r.outcome == co.AcquireLockResponse.DONE:
                self._init_id = r.done
                for ps, s in self._status():  # lost its state since: initialise it again
                    if not s.initialised:
                        self._init_one(ps, r.done)
                return False
            if r.outcome == co.AcquireLockResponse.GRANTED:
                status = self._status()
                init_id = next((s.init_id for _, s in status if s.initialised), uuid.uuid4().hex)
                self._init_id, done = init_id, ""
                try:
                    for ps, s in status:
                        if not s.initialised:
                            self._init_one(ps, init_id)
                    done = init_id
                finally:
                    self._coord("ReleaseLock", co.ReleaseLockRequest(
                        trainer_id=self.trainer_id, lock=co.INIT_PARAMETERS, done=done), "releasing the init lock")
                return True
            if time.monotonic() > deadline:
                raise ParamServerError("init_parameters(): %s still holds the init lock" % r.holder)
            if time.monotonic() - logged > 5:
                log.info("waiting for %s to initialise the pservers", r.holder)
                logged = time.monotonic()
            time.sleep(0.2)

    def _status(self) -> List[Tuple[int, pb.ShardStatus]]:
        """[(index, ShardStatus)] of the pservers that own something in the map (a new pserver,
        filled by moves, or an emptied one is never initialised)."""
        return [(ps, self._call_ps(ps, "GetShardStatus", pb.GetShardStatusRequest(), "status of"))
                for ps in self._routing().owning()]

    def _init_one(self, ps: int, init_id: str) -> None:
        j, values = self._job(), self.values
        assert values is not None
        plan = self._plan()
        groups = plan.get(ps) or [[]]
        for group in groups:
            req = pb.InitParametersRequest(
                trainer_id=self.trainer_id, parameters=j.parameters, init_id=init_id, mode=j.mode,
                staleness=j.staleness, blocks=[self._block(b, values) for b in group])
            self._call_ps(ps, "InitParameters", req, "initialising")
        count = sum(len(g) for g in plan.get(ps, []))
        self._call_ps(ps, "FinishInit", pb.FinishInitRequest(
            trainer_id=self.trainer_id, init_id=init_id, expected_blocks=count), "finishing init of")
        log.info("initialised pserver %d with %d blocks (init %s)", ps, count, init_id)

    @staticmethod
    def _block(b: co.BlockPlacement, arrays: Mapping[str, "npt.ArrayLike"]) -> tensor_pb2.TensorBlock:
        data = np.asarray(arrays[b.name], dtype="<f4").reshape(-1)[b.offset:b.offset + b.length]
        if data.size != b.length:
            raise ValueError("parameter %r has %d values, block %d needs %d from offset %d"
                             % (b.name, np.size(arrays[b.name]), b.block, b.length, b.offset))
        return tensor_pb2.TensorBlock(name=b.name, block=b.block, offset=b.offset,
                                      dtype=tensor_pb2.FLOAT32, data=data.tobytes())

    # ---- training ----
    def push(self, grads: Gradients, sparse: Optional[SparseGradients] = None, into: Optional[Values] = None,
             wait: bool = True) -> Union[int, PendingPush]:
        """Pushes the gradients as the next step: `grads` {name: flat float32 array} of every dense
        parameter, `sparse` {table: (row ids, [n, width] gradients)}. Returns the step after every
        pserver acknowledged (retrying with the same identity). With `into` ({name: flat array}), the
        new values are written there: in ASYNC from the pushes' answers (return_values), otherwise by
        a pull after the step (SYNC: the push returns once the step was applied by all trainers).
        wait=False returns at once (the arrays were copied) a PendingPush: complete() waits for it
        and writes; complete it before the next push (one step in flight keeps exactly-once)."""
        pending = self.push_async(grads, sparse, into)
        return self.complete(pending) if wait else pending

    def push_async(self, grads: Gradients, sparse: Optional[SparseGradients] = None,
                   into: Optional[Values] = None, return_rows: bool = False) -> PendingPush:
        """push(wait=False), typed: the PendingPush of the step, sent on the client's sender thread.
        return_rows (ASYNC): the answers carry the pushed rows' values after the push
        (PendingPush.rows() reads them), as a row cache wants them: no pull after the push."""
        self._require("push", initialised=True)
        self.step += 1
        asynchronous = self._job().mode == ASYNC
        planned = self._pushes(self.step, grads, sparse, into is not None and asynchronous)
        if return_rows and asynchronous:
            for _, req in planned:
                req.return_rows = bool(req.sparse_gradients)
        # blocking calls on one sender thread: cheaper than grpc futures (no thread per call), in order
        answers = self._sender.submit(
            lambda: [self._send(ps, "PushGradients", req, "pushing to") for ps, req in planned])
        return PendingPush(self.step, answers, into, tuple(planned))

    def complete(self, pending: PendingPush) -> int:
        """Waits for a pending push (push(wait=False)), writes the values into its `into`; its step."""
        answers = pending.answers.result()
        into = pending.into
        if into is not None and self._job().mode == ASYNC:
            for a in answers:
                self._store(a.blocks, into)
        elif into is not None:
            steps: Dict[int, int] = {}
            for (ps, _), a in zip(pending.planned, answers):
                steps[ps] = max(steps.get(ps, 0), a.step)
            self.pull(into, steps)
        return pending.step

    def push_nothing(self) -> None:
        """Takes part in the next step without gradients (an idle trainer in SYNC or
        BOUNDED_STALENESS mode keeps pace, or it would hold the others back)."""
        self._require("push_nothing", initialised=True)
        self.step += 1
        self._all([(ps, self._new_push(self.step)) for ps in self._routing().owning()],
                  "PushGradients", "pushing to")

    def _new_push(self, step: int, part: int = 0) -> pb.PushGradientsRequest:
        return pb.PushGradientsRequest(trainer_id=self.trainer_id, session=self.session, step=step, part=part)

    def _pushes(self, step: int, grads: Gradients, sparse: Optional[SparseGradients], returns: bool) -> Planned:
        slot_map = self._routing()  # one map for the whole step
        sync = self._job().mode == SYNC
        plan = self._plan(sync=sync)
        rows = self._rows(sparse or {}, slot_map)
        out: Planned = []
        for ps, groups in plan.items():
            for part, group in enumerate(groups):
                req = self._new_push(step, part)
                req.gradients.extend(self._block(b, grads) for b in group)
                req.return_values = returns and bool(group)
                if sync:  # exactly one push per pserver and step
                    req.sparse_gradients.extend(rows.pop(ps, []))
                out.append((ps, req))
            if ps in rows:
                req = self._new_push(step, len(groups))
                req.sparse_gradients.extend(rows.pop(ps))
                out.append((ps, req))
        return out

    def _rows(self, sparse: SparseGradients, slot_map: routing.SlotMap) -> Dict[int, List[pb.SparseRows]]:
        """{pserver: [SparseRows]}: each table's rows by owner under `slot_map`, duplicates summed."""
        out: Dict[int, List[pb.SparseRows]] = {}
        for table, (row_ids, g) in sparse.items():
            if table not in self._widths:
                raise ValueError("%r is not a sparse table of the job (%s)" % (table, sorted(self._widths)))
            ids, inverse = np.unique(np.asarray(row_ids, dtype=np.int64), return_inverse=True)
            summed = np.zeros((len(ids), self._widths[table]), dtype="<f4")
            np.add.at(summed, inverse.reshape(-1), np.asarray(g, dtype=np.float32).reshape(inverse.size, -1))
            owners = slot_map.owners_of_rows(table, ids)
            for ps in np.unique(owners):
                mask = owners == ps
                out.setdefault(int(ps), []).append(pb.SparseRows(
                    name=table, row_ids=ids[mask].tolist(), dtype=tensor_pb2.FLOAT32,
                    data=summed[mask].tobytes()))
        return out

    def pull(self, into: Values, min_steps: Optional[Mapping[int, int]] = None) -> None:
        """Writes the current value of every dense block into `into` ({name: flat float32 array},
        in place). min_steps {pserver: step}: wait until that pserver applied that step."""
        self._require("pull", initialised=True)
        planned = [(ps, pb.PullParametersRequest(
            trainer_id=self.trainer_id, min_step=(min_steps or {}).get(ps, 0),
            blocks=[tensor_pb2.BlockRef(name=b.name, block=b.block) for b in group]))
            for ps, groups in self._plan().items() for group in groups]
        for a in self._all(planned, "PullParameters", "pulling from"):
            self._store(a.blocks, into)

    def pull_rows(self, table: str, ids: "npt.ArrayLike") -> FloatArray:
        """The rows `ids` of sparse table `table`, as a [len(ids), width] float32 array (the
        pservers create missing rows with the table's initializer)."""
        self._require("pull_rows", initialised=True)
        if table not in self._widths:
            raise ValueError("%r is not a sparse table of the job (%s)" % (table, sorted(self._widths)))
        wanted = np.asarray(ids, dtype=np.int64).reshape(-1)
        unique, inverse = np.unique(wanted, return_inverse=True)
        owners = self._routing().owners_of_rows(table, unique)
        planned = [(int(ps), pb.PullParametersRequest(trainer_id=self.trainer_id, sparse_rows=[
            pb.SparseRowsRef(name=table, row_ids=unique[owners == ps].tolist())])) for ps in np.unique(owners)]
        out = np.empty((len(unique), self._widths[table]), np.float32)
        filled = np.zeros(len(unique), bool)
        for a in self._all(planned, "PullParameters", "pulling rows from"):
            for rows in a.sparse_rows:
                got = np.asarray(rows.row_ids, np.int64)
                at = np.minimum(np.searchsorted(unique, got), max(0, len(unique) - 1))
                if rows.name != table or len(got) and not np.array_equal(unique[at], got):
                    raise ParamServerError("a pserver answered rows of %s that were not asked for" % rows.name)
                out[at] = np.frombuffer(rows.data, dtype="<f4").reshape(len(got), -1)
                filled[at] = True
        if not filled.all():
            raise ParamServerError("the pservers did not answer row %d of %s" % (unique[~filled][0], table))
        return out[inverse.reshape(-1)]

    def table_width(self, table: str) -> int:
        """The width (values per row) of the job's sparse table `table`."""
        self._require("table_width")
        if table not in self._widths:
            raise ValueError("%r is not a sparse table of the job (%s)" % (table, sorted(self._widths)))
        return self._widths[table]

    @staticmethod
    def _store(blocks: Iterable[tensor_pb2.TensorBlock], into: Values) -> None:
        for b in blocks:
            if b.dtype != tensor_pb2.FLOAT32:
                raise ParamServerError("pserver sent block %s#%d as %s, expected FLOAT32"
                                       % (b.name, b.block, tensor_pb2.DataType.Name(b.dtype)))
            src, dst = np.frombuffer(b.data, dtype="<f4"), into[b.name]
            if b.offset + src.size > dst.size:
                raise ParamServerError("pserver sent block %s#%d of %d values at offset %d, beyond the "
                                       "parameter's %d" % (b.name, b.block, src.size, b.offset, dst.size))
            dst[b.offset:b.offset + src.size] = src

    # ---- the master: dataset and tasks ----
    def set_dataset(self, globs: Union[str, Sequence[str]],
                    hyperparameters: Optional[Mapping[str, Union[bool, int, float, str]]] = None) -> ma.SetDatasetResponse:
        """Sets the job's dataset (RecordIO globs, absolute paths the master can read); the first
        call wins, the same dataset again is a no-op, another raises DatasetConflict."""
        self._require("set_dataset", joined=False)
        req = ma.SetDatasetRequest(globs=[globs] if isinstance(globs, str) else list(globs),
                                   trainer_id=self.trainer_id)
        for k, v in (hyperparameters or {}).items():
            if isinstance(v, bool):
                req.hyperparameters[k].bool_value = v
            elif isinstance(v, (int, float)):
                req.hyperparameters[k].number_value = v
            else:
                req.hyperparameters[k].string_value = str(v)
        response: ma.SetDatasetResponse = self._master(ma_grpc.MasterStub, "SetDataset", req, "setting the dataset")
        return response

    def tasks(self) -> Generator[ma.Task, None, None]:
        """Yields the master's tasks (paramserver.v1.Task), pass after pass, until the job is
        finished; report each with task_finished() (or task_failed()) before taking the next.
        While the master has none to hand out, an idle trainer in SYNC or BOUNDED_STALENESS mode
        keeps pace with empty pushes. Leaving the loop early hands the held tasks back."""
        self._require("tasks", initialised=True)
        mode = self._job().mode
        hold = WAIT_HOLD_MS if mode == ASYNC else 0
        try:
            while True:
                # one id per request, the same on its retries (_master resends this object): a
                # master that saved an answer this trainer never got hands the same tasks back
                req = ma.GetTaskRequest(trainer_id=self.trainer_id, hold_ms=hold, request_id=uuid.uuid4().hex)
                setattr(req, "pass", self.current_pass)  # a Python keyword
                r: ma.GetTaskResponse = self._master(ma_grpc.MasterStub, "GetTask", req, "getting a task",
                                                     timeout_s=self.timeout_s + hold / 1000.0)
                R = ma.GetTaskResponse
                if r.outcome == R.TASK:
                    self.loss_every_records = r.loss_every_records
                    for t in [r.task] + list(r.more_tasks):
                        self._held[t.id] = t
                        yield t
                elif r.outcome in (R.WAIT, R.PASS_NOT_STARTED):
                    if mode == SYNC:
                        self.push_nothing()
                        assert self.values is not None
                        self.pull(self.values)
                    elif mode == BOUNDED_STALENESS:
                        self.push_nothing()
                    time.sleep(min(0.05, max(0.005, r.retry_after_ms / 1000.0)) if mode != ASYNC
                               else max(0.05, r.retry_after_ms / 1000.0))
                elif r.outcome == R.PASS_FINISHED:
                    self.current_pass = r.current_pass
                elif r.outcome == R.JOB_FINISHED:
                    self.current_pass = r.total_passes
                    return
                elif r.outcome == R.JOB_FAILED:
                    raise ParamServerError("the job failed: %s" % r.reason)
                else:
                    raise ParamServerError("the master answered GetTask with outcome %d" % r.outcome)
        finally:
            self._hand_back()

    def task_finished(self, task: ma.Task, records: int, loss: Iterable[ma.LossWindow] = ()) -> bool:
        """Reports `task` trained on `records` records (loss: paramserver.v1.LossWindow list);
        False when the master ignored a stale report (the task was re-dispatched)."""
        self._require("task_finished")
        self._held.pop(task.id, None)
        r: ma.TaskFinishedResponse = self._master(ma_grpc.MasterStub, "TaskFinished", ma.TaskFinishedRequest(
            trainer_id=self.trainer_id, task_id=task.id, epoch=task.epoch, records=records,
            loss=list(loss)), "reporting task %d finished" % task.id)
        return r.accepted

    def task_failed(self, task: ma.Task, reason: str, handed_back: bool = False) -> bool:
        """Reports a task that could not be trained (handed_back: returned unfinished, no failure)."""
        self._require("task_failed")
        self._held.pop(task.id, None)
        r: ma.TaskFailedResponse = self._master(ma_grpc.MasterStub, "TaskFailed", ma.TaskFailedRequest(
            trainer_id=self.trainer_id, task_id=task.id, epoch=task.epoch, reason=reason,
            handed_back=handed_back), "reporting task %d failed" % task.id)
        return r.accepted

    def _hand_back(self) -> None:
        for t in list(self._held.values()):
            try:
                self.task_failed(t, "the trainer stopped", handed_back=True)
            except ParamServerError as e:
                log.warning("could not hand task %d back (the master re-dispatches it later): %s", t.id, e)

    def report_evaluation(self, pass_: int, loss: float, accuracy: float, samples: int, auc: float = 0.0) -> None:
        self._require("report_evaluation", joined=False)
        self._master(ma_grpc.MasterStub, "ReportEvaluation", ma.ReportEvaluationRequest(
            trainer_id=self.trainer_id, loss=loss, accuracy=accuracy, samples=samples, auc=auc,
            **{"pass": pass_}), "reporting the evaluation")

    def status(self) -> ma.JobStatus:
        """The job's status (paramserver.v1.JobStatus)."""
        status: ma.JobStatus = self._master(ma_grpc.MasterStub, "GetStatus", ma.GetStatusRequest(),
                                            "getting the status")
        return status

    def acquire_lock(self, lock: int, pass_: int = 0) -> co.AcquireLockResponse:
        """AcquireLockResponse for co.INIT_PARAMETERS, co.EXPORT_MODEL or co.EVALUATE_PASS."""
        self._require("acquire_lock")
        r: co.AcquireLockResponse = self._coord("AcquireLock", co.AcquireLockRequest(
            trainer_id=self.trainer_id, lock=lock, **{"pass": pass_}), "taking a lock")  # type: ignore[arg-type]
        return r

    def release_lock(self, lock: int, pass_: int = 0, done: str = "") -> None:
        self._require("release_lock")
        self._coord("ReleaseLock", co.ReleaseLockRequest(
            trainer_id=self.trainer_id, lock=lock, done=done, **{"pass": pass_}), "releasing a lock")  # type: ignore[arg-type]

    def close(self) -> None:
        """Hands back held tasks, ends the membership (half-closes Attend) and closes the channels."""
        if self._closed.is_set():
            return
        if self.joined is not None:
            self._hand_back()
        self._closed.set()
        if self._stop is not None:
            self._stop.set()  # the heartbeats end: Attend is half-closed, the membership ends
        if self._attend is not None:
            self._attend.join(timeout=5)
            if self._attend.is_alive() and self._call is not None:
                self._call.cancel()
        self._sender.shutdown(cancel_futures=True)
        for ch in self._channels.values():
            ch.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _number(text: Optional[str], absent: int) -> int:
    try:
        return int(text) if text is not None else absent
    except ValueError:
        return absent
