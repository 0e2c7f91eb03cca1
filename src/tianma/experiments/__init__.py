"""Experiments: variants of the runtime (node implementations, settings) compared with paired
statistics (issue #18). Built so far: the variant grammar (:mod:`.variants`) and the paired
bootstrap (:mod:`.stats`); the ``tianma experiment`` command and online arms are not."""
