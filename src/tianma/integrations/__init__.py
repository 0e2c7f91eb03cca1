"""Code tianma ships to run inside other programs (each module self-contained: it imports
nothing from tianma), e.g. :mod:`tianma.integrations.openwebui_feedback`, an Open WebUI Function."""
