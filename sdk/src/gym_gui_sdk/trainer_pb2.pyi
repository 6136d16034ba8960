from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunInfo(_message.Message):
    __slots__ = ("run_id", "worker", "env_id", "state", "created_at", "started_at", "ended_at", "has_exit_code", "exit_code", "reason", "archived", "lane", "run_dir", "warning", "sweep_id", "trial")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ENV_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    HAS_EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    RUN_DIR_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    TRIAL_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    worker: str
    env_id: str
    state: str
    created_at: float
    started_at: float
    ended_at: float
    has_exit_code: bool
    exit_code: int
    reason: str
    archived: bool
    lane: str
    run_dir: str
    warning: str
    sweep_id: str
    trial: int
    def __init__(self, run_id: _Optional[str] = ..., worker: _Optional[str] = ..., env_id: _Optional[str] = ..., state: _Optional[str] = ..., created_at: _Optional[float] = ..., started_at: _Optional[float] = ..., ended_at: _Optional[float] = ..., has_exit_code: bool = ..., exit_code: _Optional[int] = ..., reason: _Optional[str] = ..., archived: bool = ..., lane: _Optional[str] = ..., run_dir: _Optional[str] = ..., warning: _Optional[str] = ..., sweep_id: _Optional[str] = ..., trial: _Optional[int] = ...) -> None: ...

class StateChange(_message.Message):
    __slots__ = ("run_id", "from_state", "to_state", "time", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_STATE_FIELD_NUMBER: _ClassVar[int]
    TO_STATE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    from_state: str
    to_state: str
    time: float
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., from_state: _Optional[str] = ..., to_state: _Optional[str] = ..., time: _Optional[float] = ..., reason: _Optional[str] = ...) -> None: ...

class RunProgress(_message.Message):
    __slots__ = ("episodes", "steps", "metrics", "last_wall_time", "global_step")
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    LAST_WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_STEP_FIELD_NUMBER: _ClassVar[int]
    episodes: int
    steps: int
    metrics: int
    last_wall_time: float
    global_step: int
    def __init__(self, episodes: _Optional[int] = ..., steps: _Optional[int] = ..., metrics: _Optional[int] = ..., last_wall_time: _Optional[float] = ..., global_step: _Optional[int] = ...) -> None: ...

class RunDetail(_message.Message):
    __slots__ = ("info", "history", "config_json", "progress")
    INFO_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    info: RunInfo
    history: _containers.RepeatedCompositeFieldContainer[StateChange]
    config_json: str
    progress: RunProgress
    def __init__(self, info: _Optional[_Union[RunInfo, _Mapping]] = ..., history: _Optional[_Iterable[_Union[StateChange, _Mapping]]] = ..., config_json: _Optional[str] = ..., progress: _Optional[_Union[RunProgress, _Mapping]] = ...) -> None: ...

class SubmitRunRequest(_message.Message):
    __slots__ = ("config_json", "secret_env")
    class SecretEnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    SECRET_ENV_FIELD_NUMBER: _ClassVar[int]
    config_json: str
    secret_env: _containers.ScalarMap[str, str]
    def __init__(self, config_json: _Optional[str] = ..., secret_env: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SubmitRunResponse(_message.Message):
    __slots__ = ("info", "run_token", "plan")
    INFO_FIELD_NUMBER: _ClassVar[int]
    RUN_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    info: RunInfo
    run_token: str
    plan: LaunchPreview
    def __init__(self, info: _Optional[_Union[RunInfo, _Mapping]] = ..., run_token: _Optional[str] = ..., plan: _Optional[_Union[LaunchPreview, _Mapping]] = ...) -> None: ...

class PreviewRunRequest(_message.Message):
    __slots__ = ("config_json", "secret_env")
    class SecretEnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    SECRET_ENV_FIELD_NUMBER: _ClassVar[int]
    config_json: str
    secret_env: _containers.ScalarMap[str, str]
    def __init__(self, config_json: _Optional[str] = ..., secret_env: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LaunchPreview(_message.Message):
    __slots__ = ("argv", "cwd", "env", "display", "script_argv", "warnings", "run_id", "packages", "package_changes")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    SCRIPT_ARGV_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PACKAGES_FIELD_NUMBER: _ClassVar[int]
    PACKAGE_CHANGES_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    cwd: str
    env: _containers.ScalarMap[str, str]
    display: str
    script_argv: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    run_id: str
    packages: _containers.RepeatedScalarFieldContainer[str]
    package_changes: _containers.RepeatedCompositeFieldContainer[PackageChange]
    def __init__(self, argv: _Optional[_Iterable[str]] = ..., cwd: _Optional[str] = ..., env: _Optional[_Mapping[str, str]] = ..., display: _Optional[str] = ..., script_argv: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ..., run_id: _Optional[str] = ..., packages: _Optional[_Iterable[str]] = ..., package_changes: _Optional[_Iterable[_Union[PackageChange, _Mapping]]] = ...) -> None: ...

class PackageChange(_message.Message):
    __slots__ = ("name", "old", "new")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OLD_FIELD_NUMBER: _ClassVar[int]
    NEW_FIELD_NUMBER: _ClassVar[int]
    name: str
    old: str
    new: str
    def __init__(self, name: _Optional[str] = ..., old: _Optional[str] = ..., new: _Optional[str] = ...) -> None: ...

class RunRef(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("include_archived", "limit", "after", "sort", "descending", "states", "worker", "env_id", "sweep_id", "text")
    INCLUDE_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    DESCENDING_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ENV_ID_FIELD_NUMBER: _ClassVar[int]
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    include_archived: bool
    limit: int
    after: str
    sort: str
    descending: bool
    states: _containers.RepeatedScalarFieldContainer[str]
    worker: str
    env_id: str
    sweep_id: str
    text: str
    def __init__(self, include_archived: bool = ..., limit: _Optional[int] = ..., after: _Optional[str] = ..., sort: _Optional[str] = ..., descending: bool = ..., states: _Optional[_Iterable[str]] = ..., worker: _Optional[str] = ..., env_id: _Optional[str] = ..., sweep_id: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "total", "next")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[RunInfo]
    total: int
    next: str
    def __init__(self, runs: _Optional[_Iterable[_Union[RunInfo, _Mapping]]] = ..., total: _Optional[int] = ..., next: _Optional[str] = ...) -> None: ...

class WatchRunsRequest(_message.Message):
    __slots__ = ("include_archived", "run_id", "limit")
    INCLUDE_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    include_archived: bool
    run_id: str
    limit: int
    def __init__(self, include_archived: bool = ..., run_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class RunEvent(_message.Message):
    __slots__ = ("snapshot", "change", "updated", "removed")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    snapshot: RunInfo
    change: StateChange
    updated: RunInfo
    removed: str
    def __init__(self, snapshot: _Optional[_Union[RunInfo, _Mapping]] = ..., change: _Optional[_Union[StateChange, _Mapping]] = ..., updated: _Optional[_Union[RunInfo, _Mapping]] = ..., removed: _Optional[str] = ...) -> None: ...

class PruneRunsRequest(_message.Message):
    __slots__ = ("by_age", "older_than", "states", "keep_best", "per_sweep", "run_ids", "dry_run")
    BY_AGE_FIELD_NUMBER: _ClassVar[int]
    OLDER_THAN_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    KEEP_BEST_FIELD_NUMBER: _ClassVar[int]
    PER_SWEEP_FIELD_NUMBER: _ClassVar[int]
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    by_age: bool
    older_than: float
    states: _containers.RepeatedScalarFieldContainer[str]
    keep_best: int
    per_sweep: bool
    run_ids: _containers.RepeatedScalarFieldContainer[str]
    dry_run: bool
    def __init__(self, by_age: bool = ..., older_than: _Optional[float] = ..., states: _Optional[_Iterable[str]] = ..., keep_best: _Optional[int] = ..., per_sweep: bool = ..., run_ids: _Optional[_Iterable[str]] = ..., dry_run: bool = ...) -> None: ...

class PrunedRun(_message.Message):
    __slots__ = ("info", "bytes")
    INFO_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    info: RunInfo
    bytes: int
    def __init__(self, info: _Optional[_Union[RunInfo, _Mapping]] = ..., bytes: _Optional[int] = ...) -> None: ...

class PruneRunsResponse(_message.Message):
    __slots__ = ("runs", "bytes", "kept", "skipped")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    KEPT_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[PrunedRun]
    bytes: int
    kept: _containers.RepeatedScalarFieldContainer[str]
    skipped: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, runs: _Optional[_Iterable[_Union[PrunedRun, _Mapping]]] = ..., bytes: _Optional[int] = ..., kept: _Optional[_Iterable[str]] = ..., skipped: _Optional[_Iterable[str]] = ...) -> None: ...

class ArchiveRunRequest(_message.Message):
    __slots__ = ("run_id", "archived")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    archived: bool
    def __init__(self, run_id: _Optional[str] = ..., archived: bool = ...) -> None: ...

class DeleteRunResponse(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class HealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Health(_message.Message):
    __slots__ = ("version", "pid", "address", "started_at", "runs_by_state", "home", "log_path", "max_concurrent")
    class RunsByStateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    RUNS_BY_STATE_FIELD_NUMBER: _ClassVar[int]
    HOME_FIELD_NUMBER: _ClassVar[int]
    LOG_PATH_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    version: str
    pid: int
    address: str
    started_at: float
    runs_by_state: _containers.ScalarMap[str, int]
    home: str
    log_path: str
    max_concurrent: int
    def __init__(self, version: _Optional[str] = ..., pid: _Optional[int] = ..., address: _Optional[str] = ..., started_at: _Optional[float] = ..., runs_by_state: _Optional[_Mapping[str, int]] = ..., home: _Optional[str] = ..., log_path: _Optional[str] = ..., max_concurrent: _Optional[int] = ...) -> None: ...

class ControlRunRequest(_message.Message):
    __slots__ = ("run_id", "command", "render_fps")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    RENDER_FPS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    command: ControlMessage.Command
    render_fps: float
    def __init__(self, run_id: _Optional[str] = ..., command: _Optional[_Union[ControlMessage.Command, str]] = ..., render_fps: _Optional[float] = ...) -> None: ...

class DescribeWorkerRequest(_message.Message):
    __slots__ = ("worker", "query")
    class QueryEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    WORKER_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    worker: str
    query: _containers.ScalarMap[str, str]
    def __init__(self, worker: _Optional[str] = ..., query: _Optional[_Mapping[str, str]] = ...) -> None: ...

class WorkerDescription(_message.Message):
    __slots__ = ("worker", "display_name", "lane", "available", "unavailable_reason", "bundle", "bundle_installed", "description_json")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_INSTALLED_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_JSON_FIELD_NUMBER: _ClassVar[int]
    worker: str
    display_name: str
    lane: str
    available: bool
    unavailable_reason: str
    bundle: str
    bundle_installed: bool
    description_json: str
    def __init__(self, worker: _Optional[str] = ..., display_name: _Optional[str] = ..., lane: _Optional[str] = ..., available: bool = ..., unavailable_reason: _Optional[str] = ..., bundle: _Optional[str] = ..., bundle_installed: bool = ..., description_json: _Optional[str] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShutdownResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StepBatch(_message.Message):
    __slots__ = ("episode", "step", "reward", "terminated", "truncated", "action", "observation", "info", "render", "wall_time", "episodes", "metrics", "observation_array", "observation_dtype", "observation_shape", "actor", "proposed_action", "observation_fields", "agent")
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    RENDER_FIELD_NUMBER: _ClassVar[int]
    WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_ARRAY_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_DTYPE_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_ACTION_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELDS_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    episode: _containers.RepeatedScalarFieldContainer[int]
    step: _containers.RepeatedScalarFieldContainer[int]
    reward: _containers.RepeatedScalarFieldContainer[float]
    terminated: _containers.RepeatedScalarFieldContainer[bool]
    truncated: _containers.RepeatedScalarFieldContainer[bool]
    action: _containers.RepeatedScalarFieldContainer[str]
    observation: _containers.RepeatedScalarFieldContainer[str]
    info: _containers.RepeatedScalarFieldContainer[str]
    render: _containers.RepeatedScalarFieldContainer[bytes]
    wall_time: _containers.RepeatedScalarFieldContainer[float]
    episodes: _containers.RepeatedCompositeFieldContainer[Episode]
    metrics: _containers.RepeatedCompositeFieldContainer[Metric]
    observation_array: bytes
    observation_dtype: str
    observation_shape: _containers.RepeatedScalarFieldContainer[int]
    actor: _containers.RepeatedScalarFieldContainer[int]
    proposed_action: _containers.RepeatedScalarFieldContainer[str]
    observation_fields: _containers.RepeatedCompositeFieldContainer[PackedField]
    agent: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, episode: _Optional[_Iterable[int]] = ..., step: _Optional[_Iterable[int]] = ..., reward: _Optional[_Iterable[float]] = ..., terminated: _Optional[_Iterable[bool]] = ..., truncated: _Optional[_Iterable[bool]] = ..., action: _Optional[_Iterable[str]] = ..., observation: _Optional[_Iterable[str]] = ..., info: _Optional[_Iterable[str]] = ..., render: _Optional[_Iterable[bytes]] = ..., wall_time: _Optional[_Iterable[float]] = ..., episodes: _Optional[_Iterable[_Union[Episode, _Mapping]]] = ..., metrics: _Optional[_Iterable[_Union[Metric, _Mapping]]] = ..., observation_array: _Optional[bytes] = ..., observation_dtype: _Optional[str] = ..., observation_shape: _Optional[_Iterable[int]] = ..., actor: _Optional[_Iterable[int]] = ..., proposed_action: _Optional[_Iterable[str]] = ..., observation_fields: _Optional[_Iterable[_Union[PackedField, _Mapping]]] = ..., agent: _Optional[_Iterable[str]] = ...) -> None: ...

class PackedField(_message.Message):
    __slots__ = ("key", "dtype", "shape")
    KEY_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    key: str
    dtype: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, key: _Optional[str] = ..., dtype: _Optional[str] = ..., shape: _Optional[_Iterable[int]] = ...) -> None: ...

class Episode(_message.Message):
    __slots__ = ("episode", "seed", "has_seed", "steps", "total_reward", "terminated", "truncated", "started_at", "ended_at", "info", "agent_returns")
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    HAS_SEED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_REWARD_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    AGENT_RETURNS_FIELD_NUMBER: _ClassVar[int]
    episode: int
    seed: int
    has_seed: bool
    steps: int
    total_reward: float
    terminated: bool
    truncated: bool
    started_at: float
    ended_at: float
    info: str
    agent_returns: _containers.RepeatedCompositeFieldContainer[AgentReturn]
    def __init__(self, episode: _Optional[int] = ..., seed: _Optional[int] = ..., has_seed: bool = ..., steps: _Optional[int] = ..., total_reward: _Optional[float] = ..., terminated: bool = ..., truncated: bool = ..., started_at: _Optional[float] = ..., ended_at: _Optional[float] = ..., info: _Optional[str] = ..., agent_returns: _Optional[_Iterable[_Union[AgentReturn, _Mapping]]] = ...) -> None: ...

class AgentReturn(_message.Message):
    __slots__ = ("agent", "total_reward")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_REWARD_FIELD_NUMBER: _ClassVar[int]
    agent: str
    total_reward: float
    def __init__(self, agent: _Optional[str] = ..., total_reward: _Optional[float] = ...) -> None: ...

class Metric(_message.Message):
    __slots__ = ("tag", "step", "wall_time", "value")
    TAG_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    tag: str
    step: int
    wall_time: float
    value: float
    def __init__(self, tag: _Optional[str] = ..., step: _Optional[int] = ..., wall_time: _Optional[float] = ..., value: _Optional[float] = ...) -> None: ...

class MetricBatch(_message.Message):
    __slots__ = ("metrics",)
    METRICS_FIELD_NUMBER: _ClassVar[int]
    metrics: _containers.RepeatedCompositeFieldContainer[Metric]
    def __init__(self, metrics: _Optional[_Iterable[_Union[Metric, _Mapping]]] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("kind", "path", "step", "meta")
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    kind: str
    path: str
    step: int
    meta: str
    def __init__(self, kind: _Optional[str] = ..., path: _Optional[str] = ..., step: _Optional[int] = ..., meta: _Optional[str] = ...) -> None: ...

class LogLine(_message.Message):
    __slots__ = ("stream", "line")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    stream: str
    line: str
    def __init__(self, stream: _Optional[str] = ..., line: _Optional[str] = ...) -> None: ...

class Lifecycle(_message.Message):
    __slots__ = ("phase", "message", "render_kind", "spaces")
    class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        PHASE_UNSPECIFIED: _ClassVar[Lifecycle.Phase]
        STARTED: _ClassVar[Lifecycle.Phase]
        PAUSED: _ClassVar[Lifecycle.Phase]
        RESUMED: _ClassVar[Lifecycle.Phase]
        COMPLETED: _ClassVar[Lifecycle.Phase]
        FAILED: _ClassVar[Lifecycle.Phase]
        CANCELLED: _ClassVar[Lifecycle.Phase]
    PHASE_UNSPECIFIED: Lifecycle.Phase
    STARTED: Lifecycle.Phase
    PAUSED: Lifecycle.Phase
    RESUMED: Lifecycle.Phase
    COMPLETED: Lifecycle.Phase
    FAILED: Lifecycle.Phase
    CANCELLED: Lifecycle.Phase
    PHASE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RENDER_KIND_FIELD_NUMBER: _ClassVar[int]
    SPACES_FIELD_NUMBER: _ClassVar[int]
    phase: Lifecycle.Phase
    message: str
    render_kind: str
    spaces: str
    def __init__(self, phase: _Optional[_Union[Lifecycle.Phase, str]] = ..., message: _Optional[str] = ..., render_kind: _Optional[str] = ..., spaces: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("wall_time",)
    WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    wall_time: float
    def __init__(self, wall_time: _Optional[float] = ...) -> None: ...

class WorkerEvent(_message.Message):
    __slots__ = ("level", "message", "data")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    level: str
    message: str
    data: str
    def __init__(self, level: _Optional[str] = ..., message: _Optional[str] = ..., data: _Optional[str] = ...) -> None: ...

class WorkerMessage(_message.Message):
    __slots__ = ("seq", "lifecycle", "heartbeat", "steps", "episode", "metrics", "artifact", "log", "event")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    LIFECYCLE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    seq: int
    lifecycle: Lifecycle
    heartbeat: Heartbeat
    steps: StepBatch
    episode: Episode
    metrics: MetricBatch
    artifact: Artifact
    log: LogLine
    event: WorkerEvent
    def __init__(self, seq: _Optional[int] = ..., lifecycle: _Optional[_Union[Lifecycle, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., steps: _Optional[_Union[StepBatch, _Mapping]] = ..., episode: _Optional[_Union[Episode, _Mapping]] = ..., metrics: _Optional[_Union[MetricBatch, _Mapping]] = ..., artifact: _Optional[_Union[Artifact, _Mapping]] = ..., log: _Optional[_Union[LogLine, _Mapping]] = ..., event: _Optional[_Union[WorkerEvent, _Mapping]] = ...) -> None: ...

class ControlMessage(_message.Message):
    __slots__ = ("command", "render_fps", "seq", "reason")
    class Command(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        COMMAND_UNSPECIFIED: _ClassVar[ControlMessage.Command]
        STOP: _ClassVar[ControlMessage.Command]
        PAUSE: _ClassVar[ControlMessage.Command]
        RESUME: _ClassVar[ControlMessage.Command]
        SET_RENDER_RATE: _ClassVar[ControlMessage.Command]
        CHECKPOINT_NOW: _ClassVar[ControlMessage.Command]
        ACK: _ClassVar[ControlMessage.Command]
    COMMAND_UNSPECIFIED: ControlMessage.Command
    STOP: ControlMessage.Command
    PAUSE: ControlMessage.Command
    RESUME: ControlMessage.Command
    SET_RENDER_RATE: ControlMessage.Command
    CHECKPOINT_NOW: ControlMessage.Command
    ACK: ControlMessage.Command
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    RENDER_FPS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    command: ControlMessage.Command
    render_fps: float
    seq: int
    reason: str
    def __init__(self, command: _Optional[_Union[ControlMessage.Command, str]] = ..., render_fps: _Optional[float] = ..., seq: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class RegisterWorkerRequest(_message.Message):
    __slots__ = ("run_id", "run_token", "pid", "worker_version")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    WORKER_VERSION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    run_token: str
    pid: int
    worker_version: str
    def __init__(self, run_id: _Optional[str] = ..., run_token: _Optional[str] = ..., pid: _Optional[int] = ..., worker_version: _Optional[str] = ...) -> None: ...

class RegisterWorkerResponse(_message.Message):
    __slots__ = ("session_token", "config_json", "run_dir", "render_fps")
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    RUN_DIR_FIELD_NUMBER: _ClassVar[int]
    RENDER_FPS_FIELD_NUMBER: _ClassVar[int]
    session_token: str
    config_json: str
    run_dir: str
    render_fps: float
    def __init__(self, session_token: _Optional[str] = ..., config_json: _Optional[str] = ..., run_dir: _Optional[str] = ..., render_fps: _Optional[float] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("run_id", "credits")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    credits: int
    def __init__(self, run_id: _Optional[str] = ..., credits: _Optional[int] = ...) -> None: ...

class TelemetryEvent(_message.Message):
    __slots__ = ("run_id", "steps", "episode", "metrics", "state", "lifecycle", "starved", "resumed", "event")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LIFECYCLE_FIELD_NUMBER: _ClassVar[int]
    STARVED_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    steps: StepBatch
    episode: Episode
    metrics: MetricBatch
    state: StateChange
    lifecycle: Lifecycle
    starved: Starved
    resumed: Resumed
    event: WorkerEvent
    def __init__(self, run_id: _Optional[str] = ..., steps: _Optional[_Union[StepBatch, _Mapping]] = ..., episode: _Optional[_Union[Episode, _Mapping]] = ..., metrics: _Optional[_Union[MetricBatch, _Mapping]] = ..., state: _Optional[_Union[StateChange, _Mapping]] = ..., lifecycle: _Optional[_Union[Lifecycle, _Mapping]] = ..., starved: _Optional[_Union[Starved, _Mapping]] = ..., resumed: _Optional[_Union[Resumed, _Mapping]] = ..., event: _Optional[_Union[WorkerEvent, _Mapping]] = ...) -> None: ...

class Starved(_message.Message):
    __slots__ = ("coalesced",)
    COALESCED_FIELD_NUMBER: _ClassVar[int]
    coalesced: int
    def __init__(self, coalesced: _Optional[int] = ...) -> None: ...

class Resumed(_message.Message):
    __slots__ = ("coalesced",)
    COALESCED_FIELD_NUMBER: _ClassVar[int]
    coalesced: int
    def __init__(self, coalesced: _Optional[int] = ...) -> None: ...

class ImportModelRequest(_message.Message):
    __slots__ = ("path", "worker", "algorithm", "env_id", "origin")
    PATH_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    ENV_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    path: str
    worker: str
    algorithm: str
    env_id: str
    origin: str
    def __init__(self, path: _Optional[str] = ..., worker: _Optional[str] = ..., algorithm: _Optional[str] = ..., env_id: _Optional[str] = ..., origin: _Optional[str] = ...) -> None: ...

class SweepInfo(_message.Message):
    __slots__ = ("sweep_id", "name", "state", "directory", "storage", "study", "spec_json", "created_at", "ended_at", "reason")
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    STUDY_FIELD_NUMBER: _ClassVar[int]
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    sweep_id: str
    name: str
    state: str
    directory: str
    storage: str
    study: str
    spec_json: str
    created_at: float
    ended_at: float
    reason: str
    def __init__(self, sweep_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[str] = ..., directory: _Optional[str] = ..., storage: _Optional[str] = ..., study: _Optional[str] = ..., spec_json: _Optional[str] = ..., created_at: _Optional[float] = ..., ended_at: _Optional[float] = ..., reason: _Optional[str] = ...) -> None: ...

class StartSweepRequest(_message.Message):
    __slots__ = ("spec_json",)
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    spec_json: str
    def __init__(self, spec_json: _Optional[str] = ...) -> None: ...

class SweepRef(_message.Message):
    __slots__ = ("sweep_id",)
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    sweep_id: str
    def __init__(self, sweep_id: _Optional[str] = ...) -> None: ...

class ListSweepsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSweepsResponse(_message.Message):
    __slots__ = ("sweeps",)
    SWEEPS_FIELD_NUMBER: _ClassVar[int]
    sweeps: _containers.RepeatedCompositeFieldContainer[SweepInfo]
    def __init__(self, sweeps: _Optional[_Iterable[_Union[SweepInfo, _Mapping]]] = ...) -> None: ...

class SweepDetail(_message.Message):
    __slots__ = ("info", "study_json")
    INFO_FIELD_NUMBER: _ClassVar[int]
    STUDY_JSON_FIELD_NUMBER: _ClassVar[int]
    info: SweepInfo
    study_json: str
    def __init__(self, info: _Optional[_Union[SweepInfo, _Mapping]] = ..., study_json: _Optional[str] = ...) -> None: ...

class ClaimLaunchRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class ClaimLaunchResponse(_message.Message):
    __slots__ = ("argv", "cwd", "env", "stdout_path", "stderr_path")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    STDOUT_PATH_FIELD_NUMBER: _ClassVar[int]
    STDERR_PATH_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    cwd: str
    env: _containers.ScalarMap[str, str]
    stdout_path: str
    stderr_path: str
    def __init__(self, argv: _Optional[_Iterable[str]] = ..., cwd: _Optional[str] = ..., env: _Optional[_Mapping[str, str]] = ..., stdout_path: _Optional[str] = ..., stderr_path: _Optional[str] = ...) -> None: ...
