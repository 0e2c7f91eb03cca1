"""Test doubles that ship with tianma: a stand-in for the Ollama daemon (its real HTTP protocol,
scripted answers), used by tianma's own tests and by ``tianma bench serve``; the scripted chat
model is :class:`tianma.llm.scripted.ScriptedChatModel`."""

from __future__ import annotations
