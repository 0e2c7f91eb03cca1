"""Storage: the SQL source of truth (records, schema, transactions, the vector outbox, forget's
erasure), the derived indexes (vector, keyword) and their Protocols. It imports nothing above
it — no policies, guardrails, LLM or services (:mod:`tianma.memory` uses it)."""
