"""ConversationPane: the language-model call that chose a step's action, as the conversation pane of
:class:`~gym_gui.ui.panes.views.AgentPanes` shows it."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QTextBrowser, QWidget

from gym_gui.ui.panes.payloads import CallRecord, Message, RunContext, StepKey, StepPayload

# The widest an image a call was sent is drawn (a frame is shown whole, scaled down to this).
IMAGE_WIDTH = 320
_IMAGE_SCHEME = "call-image"


def _pre(text: str) -> str:
    return f"<pre style='white-space: pre-wrap; margin: 2px 0 8px 0'>{html.escape(text)}</pre>"


class ConversationPane(QTextBrowser):
    """The language-model call that chose the step's action: what the model read, its reply, what was made of it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("conversation")
        self.setOpenLinks(False)
        self.shown: tuple[StepKey, bool, bool] | None = None
        # The images of the call shown, by the name its HTML gives them (loadResource serves them).
        self.images: dict[str, QImage] = {}
        self._images_named = 0

    def text(self) -> str:
        return self.toPlainText()

    def loadResource(self, kind: int, name: QUrl | str) -> Any:
        image = self.images.get(name.toString() if isinstance(name, QUrl) else name)
        return image if image is not None else super().loadResource(kind, name)

    def _message(self, message: Message) -> str:
        part = f"<b>{html.escape(message.role)}</b>{_pre(message.content)}"
        if message.image is None:
            return part
        image = QImage.fromData(message.image)
        if image.isNull():
            return part + "<p><i>It was sent an image that cannot be read.</i></p>"
        # A name never used before: the document caches what it loaded by name.
        self._images_named += 1
        name = f"{_IMAGE_SCHEME}:{self._images_named}"
        self.images[name] = image
        width = min(image.width(), IMAGE_WIDTH)
        caption = f"the image sent with it ({image.width()}×{image.height()} PNG)"
        return part + f"<p><img src='{name}' width='{width}'><br><i>{caption}</i></p>"

    def show_call(self, step: StepPayload, record: CallRecord | None, context: RunContext) -> None:
        call = step.call
        if call is None:
            self.setPlainText(f"Step {step.step} of episode {step.episode} made no model call.")
            self.shown = None
            return
        prompt = context.prompt(record) if record is not None else None
        shown = (step.key, record is not None, prompt is not None)
        if shown == self.shown:
            return
        self.shown = shown
        where = f"episode {step.episode}, step {step.step}"
        plan = "its first action" if call.index == 0 else f"action {call.index + 1} of its plan"
        parts = [f"<p><b>Call {call.call}</b> · {plan} · {where}</p>"]
        self.images = {}
        if record is None:
            parts.append("<p>Reading the step that made this call…</p>")
            self.setHtml("".join(parts))
            return
        for message in record.messages:
            parts.append(self._message(message))
        if record.tool_calls:
            calls = "\n".join(f"{name}({arguments})" for name, arguments in record.tool_calls)
            parts.append(f"<b>reply (tool call)</b>{_pre(calls)}")
        else:
            parts.append(f"<b>reply</b>{_pre(record.reply if record.reply is not None else '(none)')}")
        actions = ", ".join(str(a) for a in record.actions)
        verdict = "valid" if record.valid else f"invalid: {html.escape(record.error)}"
        if record.fallback:
            verdict += f"; fallback {html.escape(record.fallback)}"
        parts.append(f"<p>actions [{html.escape(actions)}] · {verdict}</p>")
        stats = []
        if record.latency_ms is not None:
            stats.append(f"{record.latency_ms:.0f} ms")
        if record.tokens_in is not None:
            stats.append(f"{record.tokens_in} tokens in")
        if record.tokens_out is not None:
            stats.append(f"{record.tokens_out} out")
        if record.attempts is not None:
            stats.append(f"{record.attempts} attempt{'s' if record.attempts != 1 else ''}")
        if record.source:
            stats.append(f"from the {html.escape(record.source)}")
        if stats:
            parts.append(f"<p>{' · '.join(stats)}</p>")
        if call.unchanged:
            parts.append(
                "<p><i>This action changed nothing the model sees: the rest of its plan was dropped.</i></p>"
            )
        if record.prefix:
            parts.append(
                f"<p><b>sent before them</b> (prefix {html.escape(record.prefix)}, the same for every call)</p>"
            )
            if prompt is None:
                parts.append("<p>Reading the prompt prefix…</p>")
            else:
                for message in prompt[: len(prompt) - len(record.messages)]:
                    parts.append(self._message(message))
        self.setHtml("".join(parts))
