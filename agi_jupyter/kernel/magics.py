"""``%%agi`` (a prompt in a cell) and ``%agi`` (sessions, history, runs, catalogue, chat).

Only IPython and traitlets are imported here: the runtime, the provider SDKs and the widget
libraries load on the first use of a magic, so ``%load_ext agi_jupyter`` stays fast. Options are
parsed with IPython's ``magic_arguments``; a bad option prints the usage, never a traceback.
Settings are traitlets, e.g. in ``ipython_config.py``: ``c.AgiMagics.default_agent = "build"``.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.error import UsageError as IPythonUsageError
from traitlets import Bool, Enum, Float, Int, Unicode

from agi_jupyter.kernel._ipython import (
    Magics,
    cell_magic,
    is_terminal,
    line_magic,
    magics_class,
    parse_argstring,
    with_arguments,
)
from agi_jupyter.kernel.context import KernelContext, context_for
from agi_jupyter.kernel.live import LiveDisplay
from agi_jupyter.kernel.render import RunView
from agi_jupyter.kernel.warmup import ready
from agi_jupyter.kinds import SdkName

FORMATS = ("markdown", "code", "text", "json")

CELL_OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("-a", "--agent"), {"help": "agent for this cell (general, plan, build, or your own)"}),
    (("-m", "--model"), {"help": "model for this cell, as provider:model"}),
    (("-s", "--session"), {"metavar": "ID", "help": "run in this session (this cell only)"}),
    (("--new",), {"action": "store_true", "help": "start a new notebook session and use it"}),
    (
        ("--sdk",),
        {
            "choices": tuple(SdkName),
            "help": "agent SDK of the new session (with --new)",
        },
    ),
    (("-f", "--format"), {"choices": FORMATS, "help": "markdown (default), code, text or json"}),
    (("-t", "--tools"), {"metavar": "T1,T2", "help": "extra tools to allow in the session"}),
    (("-c", "--context"), {"metavar": "VAR,...", "help": "describe these variables to the model"}),
    (("--thinking",), {"metavar": "LEVEL", "help": "reasoning effort (low, medium, high...)"}),
    (("--max-iterations",), {"type": int, "metavar": "N", "help": "most model turns of the run"}),
    (("--no-stream",), {"action": "store_true", "help": "show the answer when it is done"}),
    (("--background",), {"action": "store_true", "help": "return at once; output keeps updating"}),
    (("--fresh",), {"action": "store_true", "help": "call the model even if a replay matches"}),
    (
        ("--research",),
        {
            "action": "store_true",
            "help": "queue an OpenAI deep research run; a live status"
            " line shows until its report renders",
        },
    ),
]


@magics_class
class AgiMagics(Magics):  # type: ignore[misc]
    """The agi magics and their settings (``c.AgiMagics.*``)."""

    default_agent = Unicode(
        "", help="Agent of new notebook sessions (default: the project's default_agent)."
    ).tag(config=True)
    model = Unicode(
        "", help="Model of new notebook sessions, as provider:model (default: the project's)."
    ).tag(config=True)
    format = Enum(
        FORMATS, default_value="markdown", help="How %%agi shows answers: " + ", ".join(FORMATS)
    ).tag(config=True)
    max_iterations = Int(
        0, help="Model turns a %%agi run may take (0: the project's max_iterations)."
    ).tag(config=True)
    replay = Bool(
        True,
        help="Replay a recorded run when a %%agi cell renders the same request again "
        "(zero model calls); --fresh bypasses it for one cell.",
    ).tag(config=True)
    project = Unicode(
        "", help="Project folder (its .agi/ holds the store); default: the notebook's folder."
    ).tag(config=True)
    notebook_path = Unicode(
        "", help="The notebook's path, when the front end does not tell the kernel."
    ).tag(config=True)
    update_rate = Float(20.0, help="Most display updates per second while an answer streams.").tag(
        config=True
    )
    warm_up = Bool(
        True,
        help="Right after %load_ext, import the runtime and load the default model's client "
        "in the background, so the first %%agi cell answers as fast as the later ones.",
    ).tag(config=True)
    research_poll_interval = Float(
        10.0, help="Seconds between polls of a %%agi --research run's background response."
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._ctx: KernelContext | None = None

    @property
    def ctx(self) -> KernelContext:
        if self._ctx is None:
            self._ctx = context_for(self.shell, self)
        return self._ctx

    def config_layer(self) -> dict[str, Any]:
        """The settings that are also runtime config (traitlets layer of the precedence)."""
        layer: dict[str, Any] = {}
        if self.default_agent:
            layer["default_agent"] = self.default_agent
        if self.model:
            layer["default_model"] = self.model
        if self.max_iterations:
            layer["max_iterations"] = self.max_iterations
        return layer

    @with_arguments("%agi", CELL_OPTIONS)
    @cell_magic("agi")
    def agi_cell(self, line: str, cell: str) -> Any:
        """Ask an agent: the cell body is the prompt (``{var}``, ``{In[3]}``, ``{Out[3]}``,
        ``{Err[3]}`` are filled in from the notebook). The answer streams below; the cell's
        value is a RunResult (``_.text``, ``_.run_id``, ``_.messages``, ``_.usage``)."""
        args = self._parse(self.agi_cell, line)
        if args is None:
            return None
        if args.max_iterations is not None and args.max_iterations < 1:
            return self._usage(self.agi_cell, "--max-iterations must be at least 1")
        if args.sdk and not args.new:
            return self._usage(self.agi_cell, "--sdk applies to a new session: add --new")
        live = self._status_line(args)  # at once, before the runtime is imported
        try:
            ready(self.ctx)  # the warm-up started by %load_ext, if it is still going
            from agi_jupyter.errors import AgiError
            from agi_jupyter.kernel.agi_cell import CellRunner

            try:
                return CellRunner(self.ctx, args, live).run(cell)
            except AgiError as e:
                if live is not None:
                    live.discard()
                print(f"agi: {e.message}", file=sys.stderr)
                return None
        finally:
            if live is not None and not live.keep:
                live.discard()  # no status line left behind, whatever happened

    def _status_line(self, args: Any) -> LiveDisplay | None:
        """The cell's output area, showing a status line (None in a terminal IPython)."""
        if is_terminal(self.shell):
            return None
        fmt = args.format or self.format
        return LiveDisplay(RunView(), fmt, rate=self.update_rate, status_only=args.no_stream)

    @line_magic("agi")
    def agi_line(self, line: str) -> Any:
        """``%agi help`` lists the commands: sessions, use, new, history, runs, show, cancel,
        wait, agents, tools, models, config, stats, chat."""
        ready(self.ctx)
        from agi_jupyter.kernel.commands import run_command

        return run_command(self.ctx, line)

    def _parse(self, magic: Any, line: str) -> Any:
        try:
            return parse_argstring(magic, line)
        except (IPythonUsageError, ValueError) as e:
            return self._usage(magic, str(e))

    @staticmethod
    def _usage(magic: Any, message: str) -> None:
        lines = [ln.strip() for ln in magic.parser.format_usage().splitlines()]
        usage = " ".join(ln for ln in lines if ln and ln != "::")
        print(f"agi: {message}\nusage: {usage}\nSee %%agi? for every option.", file=sys.stderr)
        return None
