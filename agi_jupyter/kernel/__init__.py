"""The notebook front doors: ``%%agi`` / ``%agi`` magics, the chat widget, the ``python`` tool.

    magics       AgiMagics: the cell and line magics and their ``c.AgiMagics.*`` settings
    context      KernelContext: one Agi per kernel, the notebook session, cell ids, cell errors
    agi_cell     one %%agi cell: request, replay or run, live display, result
    commands     the %agi subcommands (sessions, history, runs, show, cancel, chat...)
    render       RunView (events -> text and tool blocks), live display, terminal printer
    dispatch     work handed from the runtime thread to the kernel's main thread
    python_tool  the ``python`` tool: code run in the user namespace on the main thread
    replay       request hashing and finding a recorded run to replay
    interpolate  {var} / {In[n]} / {Out[n]} / {Err[n]} and variable summaries
    widget       ChatWidget (anywidget) and ``chat()``
    warmup       the runtime imported and loaded in the background after ``%load_ext``
    running_cell the running cell's id from the notebook file (when the front end sends none)
    run_cell     a cell of the kernel's own notebook run inside the kernel (``notebook.run``)

Loading the extension imports IPython's magic machinery and traitlets only.
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics and the hooks that record cell ids and cell errors."""
    from agi_jupyter.kernel.context import context_for
    from agi_jupyter.kernel.magics import AgiMagics

    magics = AgiMagics(shell=ipython)
    ipython.register_magics(magics)
    ctx = context_for(ipython, magics)
    magics._ctx = ctx
    ctx.register_hooks()
    from agi_jupyter.kernel.warmup import start

    start(ctx)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics and hooks and close the runtime (runs still going are released to
    the queue, and resumed by the next kernel or any tick)."""
    from agi_jupyter.kernel.context import drop_context

    magics = ipython.magics_manager.magics
    for kind in ("line", "cell"):
        magics[kind].pop("agi", None)
    drop_context(ipython)
