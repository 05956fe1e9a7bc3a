/* unique_names.c - pass "unique-names" (GPU): no declaration hides a name
 * that is already visible.
 *
 * The CUDA back end prints IR names as they are, and passes add variables
 * and buffers with plain names (persistent's tile loop `tile` and its
 * `pipe_base`, warp-specialize's `k_fetch`, lower-tma's `X_full`, ...). A
 * user's `tile = ...` inside a persistent kernel then redeclared the tile
 * loop's variable (NVRTC: "may not be redeclared"), and a clash one scope
 * deeper would compile and read the wrong variable. The C back end picks
 * its own C names (emit_c.c, bind), so this runs for the GPU only.
 *
 * Needs: the pipeline's other passes done (run last: nothing adds names
 * after it). Guarantees: walking each kernel with C++'s scopes as the CUDA
 * back end writes them -- the parameters and dynamic shape symbols, then
 * the block indices (not in a persistent kernel: its tile loop declares
 * them), then every SEQ a scope of its own where ALLOC, LET and
 * ATOMIC_FETCH_ADD bind, and FOR binding its variable for its body -- no
 * declaration's name is already visible: a clashing variable or buffer is
 * renamed NAME_2, NAME_3, ... (the first such name not visible). Of two
 * clashing names the later declaration is renamed, whichever made it (a
 * user's shared buffer declared after lower-tma's mbarriers of the same
 * name is); parameters and shape symbols never are, and a kernel without
 * clashes is left as it is. */
#include <string.h>

#include "passes.h"
#include "../name_table.h"

typedef struct Names {
  IrModule *m;
  NameTable visible; /* names in scope (strings), a stack */
} Names;

static bool is_visible(const Names *n, const char *name) { return name_table_find(&n->visible, name) >= 0; }

/* Binds *name in the current scope, renaming it first if it is visible. */
static void declare(Names *n, const char **name) {
  if (is_visible(n, *name)) {
    const char *fresh;
    int i = 2;
    do
      fresh = arena_printf(n->m->arena, "%s_%d", *name, i++);
    while (is_visible(n, fresh));
    *name = fresh;
  }
  name_table_push(&n->visible, *name);
}

static void walk(Names *n, IrStmt *s) {
  if (!s) return;
  switch (s->kind) {
  case IR_STMT_SEQ: {
    const int height = n->visible.n;
    for (int i = 0; i < s->u.seq.n; i++) walk(n, s->u.seq.items[i]);
    name_table_truncate(&n->visible, height);
    return;
  }
  case IR_STMT_ALLOC:
    declare(n, (const char **)&s->u.alloc->name);
    return;
  case IR_STMT_LET:
    declare(n, (const char **)&s->u.let.var->name);
    return;
  case IR_STMT_ATOMIC_FETCH_ADD:
    declare(n, (const char **)&s->u.store.result->name);
    return;
  case IR_STMT_FOR: {
    const int height = n->visible.n;
    declare(n, (const char **)&s->u.for_.var->name);
    if (s->u.for_.kind == IR_FOR_STREAM_K) {
      declare(n, (const char **)&s->u.for_.k_begin->name);
      declare(n, (const char **)&s->u.for_.k_len->name);
    }
    walk(n, s->u.for_.body);
    name_table_truncate(&n->visible, height);
    return;
  }
  case IR_STMT_IF:
    walk(n, s->u.if_.then_);
    walk(n, s->u.if_.else_);
    return;
  case IR_STMT_WARP_ROLES: {
    walk(n, s->u.roles.producer);
    const int height = n->visible.n;
    if (s->u.roles.warpgroup) declare(n, (const char **)&s->u.roles.warpgroup->name);
    walk(n, s->u.roles.consumer);
    name_table_truncate(&n->visible, height);
    return;
  }
  default:
    return;
  }
}

bool pass_unique_names(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)opts;
  (void)diag;
  Names n = {m, {0}};
  name_table_init(&n.visible, NULL, NAME_KEY_STRING);
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    name_table_truncate(&n.visible, 0);
    for (int p = 0; p < k->nparams; p++) name_table_push(&n.visible, k->params[p].name);
    for (int s = 0; s < k->nsymbols; s++)
      if (!k->symbols[s]->bound) name_table_push(&n.visible, k->symbols[s]->name);
    if (!k->persistent)
      for (int g = 0; g < k->ngrid; g++)
        if (k->block_vars[g]) declare(&n, (const char **)&k->block_vars[g]->name);
    walk(&n, k->body);
  }
  name_table_free(&n.visible);
  return true;
}
