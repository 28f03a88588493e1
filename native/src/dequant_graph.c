/*
 * dequant_graph.c -- scheme graph: the dequantizer of version-2
 * descriptors (dequant_graph_shared.h, ADR-055 "The graph scheme"). prepare makes
 * the call's plan, run evaluates node 0 over a tile as float32, finish
 * frees the plan; dequant.c converts the tiles to float16 or bfloat16.
 *
 * The check a call starts with (hurray__dequant_graph_check) records
 * nothing in the descriptor, as the version-1 check dequant.c makes does
 * not: threads may dequantize rows of one descriptor at once.
 */
#include <stdlib.h>

#include "dequant_graph_shared.h"
#include "status.h"

HurrayStatus hurray__dequant_graph_check(const HurrayDescriptor *desc, const HurrayBufferList *list)
{
    if (desc->checked) {
        return hurray__graph_check_buffers(desc, list); /* the facts it keeps */
    }
    /* Never checked (a descriptor built and not validated): the rules run
     * on a private copy, whose facts are then the ones check_buffers uses. */
    const HurrayGraph *graph = desc->graph;
    size_t size = sizeof *graph + sizeof(uint64_t) * (size_t)graph->pool_len;
    HurrayGraph *copy = malloc(size);
    if (copy == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY,
                            "hurray_dequantize: out of memory for a check of the graph");
    }
    memcpy(copy, graph, size);
    copy->pool_cap = graph->pool_len;
    hurray__graph_rebase(copy);
    HurrayDescriptor view = *desc; /* the shape stays the descriptor's, read only */
    view.graph = copy;
    HurrayStatus status = hurray__graph_check_rules(&view);
    if (status == HURRAY_OK) {
        status = hurray__graph_check_buffers(&view, list);
    }
    free(copy);
    return status;
}

static void graph_finish(HurrayDequantJob *job)
{
    hurray__graph_plan_free(job->scheme_state);
    job->scheme_state = NULL;
}

static HurrayStatus graph_prepare(HurrayDequantJob *job)
{
    HurrayGraphPlan *plan = NULL;
    uint64_t elements = 1; /* the tensor's: the check proved the product fits */
    for (uint32_t k = 0; k < job->desc->rank; k++) {
        elements *= job->desc->shape[k];
    }
    HURRAY__TRY(hurray__graph_plan_new(job->desc, job->buffers, job->simd, elements, &plan));
    job->scheme_state = plan;
    job->finish = graph_finish;
    return HURRAY_OK;
}

/* Tiles hold at most HURRAY__DEQUANT_TILE = HURRAY__G_REQ elements, and
 * at most the tensor's (plan->req). */
static void graph_run(const HurrayDequantJob *job, uint64_t first, uint64_t count, float *out)
{
    const HurrayGraphPlan *plan = job->scheme_state;
    hurray__graph_range(plan, 0, HURRAY__G_F32, first, count, out, plan->arena);
}

const HurrayDequantScheme hurray__dequant_graph = {NULL, graph_prepare, graph_run};
