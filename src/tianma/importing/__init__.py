"""``tianma import``: old chat history moved in — parsed, screened, stored with its original
times, compressed by day, learnt from in order (:mod:`tianma.importing.pipeline`)."""
