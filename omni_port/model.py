"""Data that crosses pipeline stages: diagnostics, blocks, anchors, patches, placements."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


class Code(enum.StrEnum):
    """Diagnostic codes. ``omni-port codes`` lists them with their descriptions."""

    #: The finding family the code belongs to (``kind`` in JSON reports, ``check`` tallies).
    kind: str
    description: str

    def __new__(cls, value: str, kind: str, description: str) -> Code:
        member = str.__new__(cls, value)
        member._value_ = value
        member.kind = kind
        member.description = description
        return member

    # Inputs
    OP001 = ("OP001", "unreadable", "Input file cannot be read or is not valid UTF-8.")
    OP002 = (
        "OP002",
        "syntax-error",
        "Input file is not valid Python, or nests too deeply to read (over 100 levels).",
    )
    OP003 = ("OP003", "unavailable-source", "Upstream source cannot be located or downloaded.")
    OP004 = ("OP004", "missing-definition", "Required class or method is missing from the input.")
    OP005 = ("OP005", "bad-option", "Invalid configuration value or option.")
    OP006 = (
        "OP006",
        "unwritable",
        "Output cannot be written: read-only location, full disk, or no permission.",
    )
    OP007 = (
        "OP007",
        "busy",
        "Another omni-port command holds the workspace's lock (one writer at a time): this "
        "one waited, then stopped without reading or writing anything.",
    )
    # Markers
    OP101 = ("OP101", "malformed-marker", "Block marker opened but never closed.")
    OP102 = ("OP102", "malformed-marker", "Block marker closes a block that was never opened.")
    OP103 = (
        "OP103",
        "malformed-marker",
        "Opening and closing markers sit at different block levels.",
    )
    OP104 = (
        "OP104",
        "malformed-marker",
        "Marker comment splits a statement (inside an expression or clause).",
    )
    OP105 = ("OP105", "malformed-marker", "Marked blocks are nested.")
    # Patches
    OP201 = ("OP201", "bad-patch", "Patch file is malformed.")
    OP202 = ("OP202", "bad-patch", "Patch index names a file that does not exist.")
    OP203 = ("OP203", "bad-patch", "Patch file name escapes the patches directory.")
    OP204 = ("OP204", "bad-patch", "Patch set is empty or missing its index.")
    OP205 = (
        "OP205",
        "lost-decision",
        "A command would drop a resolution recorded in the patches: it refuses unless told to.",
    )
    OP206 = (
        "OP206",
        "unrecorded-edit",
        "An edit of a generated runner that `continue` cannot record as a block's place and "
        "code (it is in code no block owns).",
    )
    OP207 = (
        "OP207",
        "hand-edit",
        "A generated runner was edited since sync wrote it: a command that would overwrite "
        "it refuses (`omni-port continue` takes the edits, `--discard-edits` drops them).",
    )
    # Sync
    OP301 = ("OP301", "conflict", "Block conflict: no certain place for it in the new upstream.")
    OP302 = ("OP302", "vanished-method", "A copied upstream method no longer exists upstream.")
    OP303 = ("OP303", "unresolved-name", "A free name of the generated module cannot be resolved.")
    OP304 = ("OP304", "would-change", "Generated output would change (--check).")
    OP306 = (
        "OP306",
        "upstream-lag",
        "Upstream change the runners never had: an unmarked edit is an older release's code "
        "(sync follows the new upstream).",
    )
    OP307 = (
        "OP307",
        "upstream-drift",
        "An unmarked edit is upstream code of a release newer than the base "
        "(sync follows the new upstream).",
    )
    OP308 = (
        "OP308",
        "counterpart-order",
        "Omni's GPU runner has a block's code elsewhere, and upstream code between the two "
        "places reads what the block binds (a conflict at an upgrade, a note onto the base).",
    )
    OP309 = (
        "OP309",
        "intent",
        "Omni's code wins over upstream's edit of the statements it replaces or deletes: "
        "review upstream's change (its diff is in the finding's detail).",
    )
    OP310 = (
        "OP310",
        "unresolved-conflict",
        "Generated module still holds a conflict: a block left commented out, not deployable.",
    )
    OP311 = (
        "OP311",
        "nothing-to-check",
        "Nothing extracted or nothing generated: the gate cannot check the runners, so it fails.",
    )
    OP312 = (
        "OP312",
        "dropped",
        "A maintainer dropped the omni edit as obsolete on this upstream (`resolve --drop`): "
        "nothing of it is generated; the reason is in its patch and the lock.",
    )
    OP313 = (
        "OP313",
        "carried-binding",
        "A block keeps the base's binding of a local it reads, which upstream took out of the "
        "method (a plain read of state upstream still reads): review whether omni's code still "
        "needs it.",
    )
    OP314 = (
        "OP314",
        "early-exit",
        "Upstream code the output follows holds an exit (a return or a raise) that skips "
        "what omni's code does at every other exit of its kind in the method: review "
        "whether it needs omni's treatment too.",
    )
    # Composition of Model Runner V2 runners
    OP320 = (
        "OP320",
        "collision",
        "Both runner families override a method and neither calls the other through super().",
    )
    OP321 = (
        "OP321",
        "bypass",
        "Omni's replacement of a vLLM method skips an NPU override it called.",
    )
    OP322 = (
        "OP322",
        "call",
        "Omni's code calls a method the composed runner lacks, or with arguments it does not take.",
    )
    OP323 = (
        "OP323",
        "wrapper-collision",
        "The NPU override wraps super() and omni's override replaces the method: inheriting "
        "drops the NPU wrapper.",
    )
    OP324 = (
        "OP324",
        "not-composed",
        "A method both runner families override cannot be composed: a marked conflict in the file.",
    )
    OP325 = (
        "OP325",
        "ascend-patch",
        "Omni's V2 code uses a vLLM name a vllm-ascend patch_v2 module replaces: the generated "
        "code calls vllm-ascend's (a note), or still vLLM's (an error).",
    )
    OP326 = (
        "OP326",
        "cuda-check",
        "A CUDA-only device check in omni's V2 code: made device-neutral for the NPU (a note), "
        "or left as it is (an error).",
    )
    OP327 = (
        "OP327",
        "torch-cuda",
        "A torch.cuda call runs on the NPU only through vllm-ascend's torch_cuda_wrapper "
        "(a note), or has no NPU redirection at all (an error).",
    )
    OP328 = (
        "OP328",
        "runner-api",
        "A generated V2 runner does not keep the API of omni's class: a method, its "
        "signature, or a class of the module.",
    )
    OP329 = (
        "OP329",
        "npu-override-runs",
        "In the generated V2 runner an NPU override runs more than once, or never without a "
        "marker saying why.",
    )
    OP330 = (
        "OP330",
        "substitute",
        "An omni class is built on a vLLM class vllm-ascend substitutes (through a patch or a "
        "factory): rebased onto the substitute (a note), or still on vLLM's (an error).",
    )
    OP331 = (
        "OP331",
        "graph-capture",
        "vLLM's CUDA graph capture helper in generated V2 code: entered inside vllm-ascend's "
        "communicator_switch (a note), or outside it, where vLLM asserts a CUDA or XPU "
        "communicator when TP, DP or PP > 1 (an error).",
    )
    OP332 = (
        "OP332",
        "npu-instance",
        "Generated V2 code builds vLLM's class where vllm-ascend's runner installs its own "
        "(NPUModelRunner.__init__, or a graph-manager wrapper around vLLM's code): an error.",
    )
    OP333 = (
        "OP333",
        "allow-condition",
        "A V2 allow-list entry requires a condition that does not hold in the generated code, "
        "or that omni-port does not know.",
    )
    OP334 = (
        "OP334",
        "generation-warm-up",
        "A generation V2 worker's warm-up cannot keep the NPU worker's: its warm-up calls a "
        "runner method besides the model steps the switch skips (an error), or could not be "
        "read (a note).",
    )
    OP335 = (
        "OP335",
        "lag",
        "Omni's V2 method is a copy of an older vLLM's, and the vLLM release the NPU runner "
        "runs on has a step it lacks (a note naming both releases).",
    )
    OP336 = (
        "OP336",
        "dead-branch",
        "Code of a copied NPU wrapper that never runs on the V2 runners: a branch whose test "
        "is false, or a call of an NPU helper that returns at once, under the parallel "
        "layouts they refuse (a note).",
    )
    # Catalog and drift
    OP401 = ("OP401", "catalog", "Catalog structure is not understood.")
    OP402 = ("OP402", "uncatalogued", "Block in the code that no catalog entry describes.")
    OP403 = ("OP403", "missing-from-code", "Catalog entry whose code no longer exists.")
    OP404 = (
        "OP404",
        "content-drift",
        "Catalog entry and block match by place but their code differs.",
    )
    OP405 = (
        "OP405",
        "location-drift",
        "Catalog entry and block have the same code in a different place.",
    )
    OP406 = (
        "OP406",
        "stale-generated",
        "Generated file differs from what sync would produce, or was edited.",
    )
    OP407 = (
        "OP407",
        "implicit-edit",
        "Implicit edit: runner code differs from its upstream base outside markers (a note).",
    )
    OP408 = ("OP408", "parity", "One runner family overrides or defines what the other lacks.")
    OP409 = (
        "OP409",
        "catalog-location",
        "A block is placed where its catalog Location line says it does not go.",
    )
    # Verification of generated code
    OP501 = ("OP501", "compile", "Generated module does not parse or compile.")
    OP502 = ("OP502", "undefined-name", "Name used but never defined.")
    OP503 = ("OP503", "redefinition", "Name defined twice.")
    OP504 = ("OP504", "unused-import", "Import left unused by splicing.")
    OP505 = (
        "OP505",
        "unresolved-import",
        "Import does not resolve against the pinned package sources.",
    )
    OP506 = ("OP506", "unverified", "Import could not be verified: package source unavailable.")
    OP507 = (
        "OP507",
        "unbound-local",
        "Block reads a local name not bound on every path before it.",
    )
    OP508 = ("OP508", "override", "Override has no upstream method, or an incompatible signature.")
    OP509 = ("OP509", "missing-attribute", "Upstream attribute a block uses no longer exists.")
    OP510 = (
        "OP510",
        "argument-mismatch",
        "Arguments or unpacking targets do not fit the parameters or fields they fill.",
    )
    OP511 = (
        "OP511",
        "vllm-mismatch",
        "The vllm-omni and vllm-ascend releases run on different vLLM releases.",
    )
    OP512 = (
        "OP512",
        "repeated-call",
        "A method runs a call more often than both the new upstream and the old runner do.",
    )
    OP513 = (
        "OP513",
        "placed-nowhere",
        "A block reported placed has no line in the output, nor upstream's standing for it.",
    )
    OP514 = (
        "OP514",
        "resolution-deletes",
        "A recorded resolution has a block's own code replace upstream statements it did not "
        "replace in its base: that upstream code is deleted.",
    )
    OP515 = (
        "OP515",
        "dead-store",
        "A copied method binds a local name that nothing reads (a note when the source had it).",
    )
    OP516 = (
        "OP516",
        "lost-hook-call",
        "A copied method no longer calls a method upstream's own version of it calls.",
    )
    # Notes
    OP901 = ("OP901", "no-base", "No upstream base given: copies are detected by markers only.")
    OP902 = (
        "OP902",
        "comment-drift",
        "Comments omni changed outside blocks are not carried by sync.",
    )


class Layout(enum.StrEnum):
    """Which runners a generated tree holds."""

    V1 = "v1"
    """vLLM-Omni's NPU runners (``vllm_omni.platforms.npu.worker``) on ``model_runner_v1``."""
    V2 = "v2"
    """vLLM-Omni's Model Runner V2 runners (``vllm_omni.worker_v2``) on vllm-ascend's V2."""
    GPU = "gpu"
    """vLLM-Omni's GPU runners (``vllm_omni.worker``) on vLLM's ``gpu_model_runner``."""
    GPU_V2 = "gpu-v2"
    """vLLM-Omni's Model Runner V2 runners (``vllm_omni.worker_v2``) on vLLM's V2 runner
    (``vllm.v1.worker.gpu.model_runner``), as they run on GPUs: no NPU runner composed."""


class Severity(enum.StrEnum):
    """How much a finding matters to the exit code."""

    ERROR = "error"
    """Counts as a finding: exit 1."""
    NOTE = "note"
    """Shown, never changes the exit code."""


#: What a finding an open conflict owns says after naming it: resolving the conflict is the
#: fix (verify's OP510, OP515 at code a conflict keeps or orphans, OP507 at a read a
#: conflict's commented-out code would bind; the choices of other conflicts are judged without
#: them).
RESOLVE_FIRST = "resolve the conflict first"


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnostic, printed as ``path:line:col: CODE message``; its kind is its code's."""

    #: Diagnostic code.
    code: Code
    #: Path of the file the finding is about, as given by the user.
    path: str
    #: 1-based line (0 when the finding is about the whole file).
    line: int
    #: Human-readable explanation; a second location goes here.
    message: str
    #: 1-based column.
    col: int = 1
    #: Whether the finding affects the exit code.
    severity: Severity = Severity.ERROR
    #: Supporting text shown under the finding (a diff, the code concerned).
    detail: str = ""

    @property
    def kind(self) -> str:
        """The finding family (``conflict``, ``malformed-marker``, ...), from the code."""
        return self.code.kind

    @property
    def behind_conflict(self) -> bool:
        """Whether an open conflict owns it (its message names the conflict): summaries count
        it under the conflicts."""
        return RESOLVE_FIRST in self.message

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code.value} {self.message}"


class Edge(enum.StrEnum):
    """Where a block sat among the upstream statements of its body."""

    NONE = "none"
    """Upstream statements before and after it."""
    FIRST = "first"
    """No upstream statement before it in its body."""
    LAST = "last"
    """No upstream statement after it in its body."""
    ONLY = "only"
    """No upstream statement in its body at all."""


@dataclass(frozen=True, slots=True)
class Resolution:
    """A maintainer's recorded answer to a conflict (replayed like git rerere).

    It holds while upstream still has what it was recorded against (``after`` in the body
    ``path``, then ``replaces``) and, when it carries ``code``, while the block's own code is
    the one it was recorded for; otherwise sync turns the block back into a conflict that
    says why.
    """

    #: Normalized statement the block goes after ("" = first in its body).
    after: str
    #: Path of the body the block goes into.
    path: tuple[str, ...]
    #: Upstream statements (full keys) the block replaces there; they must still be there.
    #: A signature edit's resolution holds the upstream signature it was made against.
    replaces: tuple[str, ...] = ()
    #: The code that goes there instead of the block's own (None: the block's own); ""
    #: puts nothing there: the maintainer dropped the block on this upstream.
    code: str | None = None
    #: sha256 of the block's own code when ``code`` was recorded ("" without ``code``).
    made_for: str = ""
    #: Who recorded it (git's author identity, else the login name).
    by: str = ""
    #: Why, in the maintainer's words (or what the command recorded it from).
    why: str = ""

    @property
    def dropped(self) -> bool:
        """The block is dropped on this upstream: nothing of it goes in (``resolve --drop``,
        or its conflict region deleted before ``continue``)."""
        return self.code == "" and not self.path and not self.replaces


def code_digest(code: str) -> str:
    """sha256 of a block's code, as ``Resolution.made_for`` records it."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where a block sits relative to the upstream code around it.

    Every statement is a normalized key (see ``syntax.normalize``): comments, quotes and
    wrapping do not matter. Only upstream statements are used as anchors.
    """

    #: Headers of the enclosing compound statements, outermost first; a clause other
    #: than the main body adds its own header (``else:``, ``except E:``).
    path: tuple[str, ...] = ()
    #: Upstream statements before the block in its body, nearest first.
    before: tuple[str, ...] = ()
    #: Upstream statements after the block in its body, nearest first.
    after: tuple[str, ...] = ()
    #: Upstream statements the block replaced, in order (empty for an insertion).
    replaced: tuple[str, ...] = ()
    #: First / last position in its body.
    edge: Edge = Edge.NONE
    #: A recorded conflict resolution, if any.
    resolution: Resolution | None = None


class BlockKind(enum.StrEnum):
    """What a statement-level edit of a copied method does to the upstream code."""

    INSERTION = "insertion"
    """Adds omni statements between upstream statements."""
    REPLACEMENT = "replacement"
    """Replaces upstream statements with omni statements."""
    DELETION = "deletion"
    """Removes upstream statements (implicit edits only)."""
    HEADER = "header"
    """Rewrites the header of an upstream compound statement; its bodies stay upstream's."""
    SIGNATURE = "signature"
    """Rewrites the decorators and signature of a copied member."""


class RegionKind(enum.StrEnum):
    """A marked region carried whole with omni-owned code (not placed statement by statement)."""

    CLASS_LEVEL = "class-level"
    """Around whole members of a runner class."""
    MODULE_LEVEL = "module-level"
    """At module level."""
    CONTAINED = "contained"
    """Inside an omni-owned member (listed for the catalog)."""
    OVERRIDE = "override"
    """A method both runner families override (V2 composition): composed by a rule
    (``decided_by``), kept as omni's by a reviewed allow-list entry, or a conflict."""
    REWRITE = "rewrite"
    """A statement of omni's code the V2 composition rewrote for the NPU: a name a
    vllm-ascend patch installs, or a CUDA-only device check made device-neutral."""


def piece_kind(value: str) -> BlockKind | RegionKind:
    """The kind a report row names, back from its text. Raises ValueError when unknown."""
    return BlockKind(value) if value in BlockKind.__members__.values() else RegionKind(value)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a piece came from in its source file."""

    #: Source path as given to extract.
    path: str
    #: First line (1-based) of the piece in the source.
    start: int
    #: Last line of the piece in the source.
    end: int

    def __str__(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"


@dataclass(frozen=True, slots=True)
class Chunk:
    """Omni-owned code carried verbatim: module code, owned members, marked regions."""

    #: Stable identifier, also the patch file stem.
    id: str
    #: Enclosing class name, or "" at module level.
    owner: str
    #: Member name for a def or class, "" for other statements.
    name: str
    #: The code, dedented to column 0, with its leading comments and blank lines.
    code: str
    #: Where the code came from.
    origin: Origin
    #: True when the chunk is exactly one ``Omni-new`` marked region.
    marked: bool = False
    #: Maintainer-facing title (used by the catalog).
    title: str = ""


@dataclass(frozen=True, slots=True)
class ClassHeader:
    """The ``class X(...):`` line of a runner class; its members follow in the index."""

    id: str
    #: Class name.
    name: str
    #: Leading comments, decorators and the header line, dedented.
    code: str
    #: Indentation of the class body in the source.
    body_indent: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class Copy:
    """A member that is a copy of an upstream definition, regenerated at every sync."""

    id: str
    #: Enclosing class in the omni module ("" for a module-level copy).
    owner: str
    #: Member name in the omni module.
    name: str
    #: Upstream class that holds the original ("" for module level).
    upstream_owner: str
    #: Name of the original upstream definition.
    upstream_name: str
    #: Comments and blank lines above the definition in the omni source.
    leading: str
    origin: Origin
    #: Share of the omni code matched in the base (None when no base was given).
    similarity: float | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """A statement-level omni edit inside a copied member."""

    id: str
    #: Enclosing class ("" for a module-level copied class).
    owner: str
    #: Copied member the block lives in.
    member: str
    kind: BlockKind
    #: True for an ``Omni-new`` region, False for an implicit edit (outside markers).
    marked: bool
    #: The block's own code, byte-exact but dedented; markers included.
    code: str
    anchor: Anchor
    origin: Origin
    title: str = ""
    #: Where omni's GPU runner of the same release has the same statements: a second
    #: anchor, written independently of the NPU copy.
    counterpart: Anchor | None = None
    #: A part of a marked region that holds upstream code too: (the region has upstream
    #: statements before this part, after it). Its code repeats the region's markers.
    fenced: tuple[bool, bool] = (False, False)


Piece = Chunk | ClassHeader | Copy | Block


@dataclass(frozen=True, slots=True)
class ModulePatches:
    """Everything needed to rebuild one runner module from an upstream version."""

    #: Module file name, e.g. ``npu_ar_model_runner.py``.
    name: str
    #: Source path the pieces were extracted from.
    source: str
    #: sha256 of the source bytes.
    source_sha256: str
    #: Upstream the source was compared with (``vllm-ascend==0.18.0`` or a path), or "".
    base: str
    #: sha256 of the base file, or "".
    base_sha256: str
    #: Module pieces in output order.
    pieces: tuple[Piece, ...]
    #: Line ending of the source ("\n" or "\r\n").
    newline: str = "\n"
    #: Imports the source itself left unused (kept even when unused in the output).
    unused_imports: tuple[str, ...] = ()
    #: Whether the source opened with a UTF-8 byte order mark (the output keeps it).
    bom: bool = False


@dataclass(frozen=True, slots=True)
class PatchSet:
    """All modules of one extraction, in a stable order."""

    modules: tuple[ModulePatches, ...]


class Status(enum.StrEnum):
    """Outcome of one piece in a sync."""

    PLACED = "placed"
    """Placed at a certain anchor."""
    FOLLOWED = "followed"
    """An unmarked edit that was upstream's own code: the output follows the new upstream."""
    CONFLICT = "conflict"
    """No certain place: reported with candidates, left commented out in the output."""
    CARRIED = "carried"
    """Omni-owned code copied verbatim."""
    DROPPED = "dropped"
    """A maintainer dropped the omni edit as obsolete on this upstream (``resolve --drop``):
    nothing of it is generated; the lock keeps the reason."""
    EXTRACTED = "extracted"
    """Found by extract (no placement yet)."""


class Rule(enum.StrEnum):
    """A kind of evidence that decided where a block goes (``decided_by``)."""

    ANCHOR = "anchor"
    """The anchor scored one place clearly above every other."""
    RESOLVED = "resolved"
    """A maintainer's recorded resolution (``omni-port resolve``)."""
    CONVERGENT = "convergent"
    """Upstream made the same change: its code at the place is the block's."""
    UPSTREAM_HISTORY = "upstream-history"
    """An upstream release holds the edit's text there: upstream code, not an omni edit."""
    MERGE3 = "merge3"
    """Both sides edited one statement; the edits touch different elements and merge."""
    DATAFLOW = "dataflow"
    """The names the block and the new upstream code read and bind order them."""
    LAYOUT = "layout"
    """The blank lines around the block: upstream's new code joined the other paragraph."""
    ORDER = "order"
    """The only good place that keeps the order of the member's blocks."""
    CATALOG = "catalog"
    """The catalog's ``Location:`` line rules out the other places."""
    COUNTERPART = "counterpart"
    """Omni's GPU runner has the same code at the place one of the candidates is."""
    STEPWISE = "stepwise"
    """Followed through each upstream release between the base and the new upstream."""
    INTENT = "intent"
    """Omni owns what it changed: a marked block (or a deletion no release explains) wins
    over upstream's edit of the statements it replaces; the edit is left for review."""
    FOLLOWED_WHOLE = "followed-whole"
    """An upstream commit is followed whole in a method: where the runners' lag behind it is
    followed at one edit and omni's code kept over what it brought at another, every edit
    of it there is a conflict naming it."""
    FOLLOWED_ACROSS = "followed-across"
    """An upstream change is followed whole across the copied methods of a module: where it
    is followed at one edit and omni's code kept against it at another, in any method,
    every such edit is a conflict naming it and each method's hunks."""
    RUN_ONCE = "run-once"
    """No call runs more often than in both the new upstream and the old runner: a block
    that adds a copy is a conflict, or upstream's own copy a few statements off, followed."""
    CARRIED_BINDING = "carried-binding"
    """The block reads a local upstream took out of the method: it carries the base's
    binding of it (a plain read of state upstream still reads) before its code."""
    COUPLED = "coupled"
    """A block that holds only with another placed, or reads what nothing placed binds, is
    a conflict when that is not so."""
    OVERLAP = "overlap"
    """A block that replaces the statements another block's place lies in is a conflict;
    an edit followed as upstream code gives them up."""
    EARLY_EXIT = "early-exit"
    """An upstream exit the output follows, where omni changed every other exit of its kind
    in the method: a note naming the omni code it skips, or a conflict where omni changed
    the value every other exit returns."""
    UNREAD_LAG = "unread-lag"
    """Upstream code the runners never had that only binds locals nothing in the output
    reads (upstream read them only in code omni's blocks replace) stays out, with a note."""
    OMNI_SUPER = "omni-super"
    """V2: omni's override calls super(), which reaches the NPU override: carried verbatim."""
    NPU_WRAPPER = "npu-wrapper"
    """V2: the NPU override wraps super(): generated as that wrapper, calling omni's override
    (renamed) where it called super(), so that each runs once."""
    NPU_SPLICE = "npu-splice"
    """V2: both replace vLLM's body: omni's hunks against vLLM spliced into the NPU body."""
    ALLOWED = "allowed"
    """V2: a reviewed allow-list entry keeps omni's override and drops the NPU one."""
    ASCEND_PATCH = "ascend-patch"
    """V2: a vLLM name omni uses is the one a vllm-ascend patch module installs."""
    DEVICE_NEUTRAL = "device-neutral"
    """V2: a CUDA-only device check made device-neutral."""
    SUBSTITUTE = "substitute"
    """V2: an omni class built on a vLLM class vllm-ascend substitutes, rebased onto the
    substitute (``DefaultModelState`` -> ``AscendModelState``)."""
    COMMUNICATOR_SWITCH = "communicator-switch"
    """V2: a call of vLLM's CUDA graph capture helper entered inside vllm-ascend's
    ``communicator_switch``, as vllm-ascend's own V2 capture does."""
    GUARD = "npu-guard"
    """V2: a step of a copied NPU wrapper the omni stage cannot serve, left out of that
    class's copy by a reviewed allow-list entry that says why."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One possible place of a block in the new upstream."""

    #: Line in the upstream file before which the block would go.
    line: int
    #: Score in [0, 1].
    score: float
    #: The upstream statement at that place (normalized), for the report.
    text: str
    #: Path of the body the candidate is in.
    path: tuple[str, ...] = ()
    #: Upstream statements the block would replace there, from ``line`` on (0: inserted
    #: before it). Two candidates at one line differ by it.
    span: int = 0


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a block ended up in a generated module."""

    block_id: str
    module: str
    owner: str
    member: str
    #: What the block does, or which kind of carried region it is.
    kind: BlockKind | RegionKind
    marked: bool
    status: Status
    #: Score of the chosen place (1.0 for carried code).
    confidence: float
    #: Output line range (1-based, inclusive); the conflict region for a conflict.
    start: int = 0
    end: int = 0
    #: Best candidate places, best first (conflicts list at least one when any exists).
    candidates: tuple[Candidate, ...] = ()
    #: Why a conflict is a conflict; for a decision by more than the anchor, how it was made.
    reason: str = ""
    #: The kinds of evidence that decided the place (empty for conflicts and carried code).
    decided_by: tuple[Rule, ...] = ()
    #: The upstream release behind an ``upstream-history`` decision.
    release: str = ""


@dataclass(frozen=True, slots=True)
class Report:
    """What a command tells the user and writes to ``--json``; it decides the exit code."""

    placements: tuple[Placement, ...] = ()
    findings: tuple[Finding, ...] = ()
    #: Counters for the one-line summary and the JSON report, e.g. {"placed": 12}.
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def return_code(self) -> int:
        """1 when a finding is an error (a conflict, drift, a verification failure, output
        that would change under --check: OP304), else 0. Bad input never makes a report: it
        raises ``BadInput`` (exit 2); anything unexpected exits 123."""
        return 1 if any(f.severity is Severity.ERROR for f in self.findings) else 0


# --- what the stages read: statement trees and the texts they come from ----------------------


@dataclass(frozen=True, slots=True)
class Comment:
    """A full-line comment at statement level."""

    line: int
    col: int
    text: str


@dataclass(frozen=True, slots=True)
class Stmt:
    """One statement with its position and normalized key."""

    #: Normalized statement, or normalized header for a compound statement.
    key: str
    #: ``ast`` class name ("Assign", "If", "FunctionDef", ...).
    kind: str
    #: Name of a def or class, "" otherwise.
    name: str
    #: First line of the comments and blank lines that belong to this statement.
    lead: int
    #: First line of the statement (its first decorator for a def).
    start: int
    #: Last line of the statement's code.
    end: int
    #: Last line including the trailing comments of nested bodies.
    full_end: int
    #: Statement-level comments among its leading lines.
    leading: tuple[Comment, ...]
    #: Bodies of a compound statement: main body first, then other clauses.
    clauses: tuple[Suite, ...]
    #: Names the statement reads (``x``, ``self.x``).
    reads: frozenset[str]
    #: Names the statement binds (``x``, ``self.x``).
    writes: frozenset[str]


@dataclass(frozen=True, slots=True)
class Suite:
    """A body: the statements of a module, class, function or clause."""

    #: "" for the main body of its statement; the clause header otherwise ("else:").
    label: str
    #: Indentation of its statements; None for a body on the header line (``if x: y``).
    indent: str | None
    stmts: tuple[Stmt, ...]
    #: Statement-level comments after the last statement.
    footer: tuple[Comment, ...]
    #: Last line of the body, footer included.
    end: int


@dataclass(frozen=True, slots=True)
class Tree:
    """A parsed file: its lines and its module body."""

    path: str
    #: Lines without their "\\n"; line n is ``lines[n - 1]``.
    lines: tuple[str, ...]
    body: Suite

    def text(self, start: int, end: int) -> str:
        """Lines ``start..end`` (inclusive) joined, each ending with "\\n"."""
        return "".join(line + "\n" for line in self.lines[start - 1 : end])


@dataclass(frozen=True, slots=True)
class SourceText:
    """A decoded text file: content with "\\n" line endings plus what to restore."""

    #: Path as given by the user.
    path: str
    #: Content, BOM removed, line endings normalized to "\n" (left out of the repr: the
    #: sha256 names it, and a repr of a whole runner helps nobody).
    text: str = field(repr=False)
    #: Dominant line ending of the file ("\n" or "\r\n").
    newline: str
    #: Whether the file started with a UTF-8 byte order mark.
    bom: bool
    #: sha256 of the raw bytes.
    sha256: str


#: Dotted name of the upstream module the NPU runners copy from (copies import its own
#: definitions from it).
ASCEND_MODULE = "vllm_ascend.worker.model_runner_v1"

# A conflict left in a generated module is a region of comment lines (``sync.splice`` writes
# it): the gates (``verify``, ``check``) and the runtime switch read it from the text.
#: Opens a conflict region; the block's (or the vanished copy's) id follows.
CONFLICT_OPEN = "# >>>>>>> omni-port conflict:"
#: Closes a conflict region.
CONFLICT_CLOSE = "# <<<<<<< omni-port conflict end"
#: Starts each line of the commented-out code inside a region.
CONFLICT_LINE = "# | "
#: Starts each line of a region that lists a candidate place.
CONFLICT_CANDIDATE = "#   candidate:"
#: Ends the header of a region of a copy whose upstream method is gone.
CONFLICT_VANISHED = " vanished"


@dataclass(frozen=True, slots=True)
class Located:
    """One source file read from wherever its spec points."""

    #: Stable label of the distribution (``vllm-ascend==0.23.0`` or the given path).
    label: str
    #: Member path inside the package tree, e.g. ``vllm_ascend/worker/model_runner_v1.py``.
    member: str
    source: SourceText
    #: For an NPU runner of a release or checkout: omni's GPU runner beside it (None when
    #: there is none), whose blocks are a second record of where omni's code goes.
    counterpart: SourceText | None = None


@dataclass(frozen=True, slots=True)
class Release:
    """One upstream release (or commit of a clone) of the upstream module, as text."""

    #: ``vllm-ascend==0.21.0rc1``, or ``PATH@REV`` for a commit of a clone.
    label: str
    #: The module's source.
    text: str
    #: Where parsed trees of its members may be kept (None: parsed each time).
    cache: Path | None = field(default=None, compare=False)
    #: The copied members a sync reads, each parsed on its own, by (class, name):
    #: filled by the API before a sync (``api.inputs.with_members``), None for a
    #: member the release lacks.
    members: Mapping[tuple[str, str], Tree | None] = field(default_factory=dict, compare=False)
    #: What a commit of a clone says of itself, for notes: its abbreviated hash, subject
    #: and pull request ("" for a release, whose label names it).
    change: str = field(default="", compare=False)

    @property
    def named(self) -> str:
        """The release, or the commit with what it says of itself."""
        return f"{self.label} ({self.change})" if self.change else self.label


@dataclass(frozen=True, slots=True)
class Upstream:
    """A parsed upstream module: what extract compares the runners with (their base), what
    sync ports them onto (the target), and what verify checks overrides against."""

    #: ``vllm-ascend==0.23.0`` or a path.
    label: str
    #: sha256 of the module's bytes.
    sha256: str
    tree: Tree
    #: Dotted module name the copies come from, for imports of its own definitions.
    module: str = ASCEND_MODULE
    #: Class whose methods the runner classes copy; "" keeps the class each copy names.
    #: Naming it ports copies of another class, e.g. GPU-runner blocks onto NPU upstream.
    class_name: str = ""
    #: Upstream releases (or commits) around an upgrade, oldest first: the evidence of the
    #: upstream-history rule (sync reads it when the patches' base is among them).
    history: tuple[Release, ...] = ()

    @property
    def text(self) -> str:
        """The module's source text (line endings normalized to "\\n")."""
        return self.tree.text(1, len(self.tree.lines))

    @property
    def path(self) -> str:
        """The file a finding at one of its lines names: the module as it was read (a
        release's ``vllm-ascend==X/vllm_ascend/...``, shown as its copy in the cache), which
        an editor opens, where the label may name a release or a folder."""
        return self.tree.path
