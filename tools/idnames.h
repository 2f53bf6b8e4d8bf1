/* idnames.h: the names of the trace's ids and of allocation errors, for what the CLI prints. */
#ifndef GMT_IDNAMES_H
#define GMT_IDNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* Names for the X-macro ids, "?" when unknown. */
const char *gmt_rec_type_name(unsigned type);
const char *gmt_api_name(unsigned api);
/* The name of an error an allocation API returned (CUresult, cudaError_t or ncclResult_t,
 * as the API's family says), or NULL for a value not in the table. */
const char *gmt_error_name(unsigned api, int32_t error);
/* The same for a person: the name, else "error N", into buf. */
const char *gmt_error_text(unsigned api, int32_t error, char *buf, size_t len);
const char *gmt_kind_name(unsigned kind);
const char *gmt_op_name(unsigned op);
/* An op that makes a communicator (an init or a split): its scope opens before the
 * communicator exists, and what it adds is the communicator's, not a collective's. */
bool gmt_op_is_comm_init(unsigned op);
const char *gmt_component_name(unsigned component);
const char *gmt_meminfo_phase_name(unsigned phase);
const char *gmt_meminfo_source_name(unsigned source);
const char *gmt_graphmem_phase_name(unsigned phase);
const char *gmt_block_op_name(unsigned op);
const char *gmt_memstats_phase_name(unsigned phase);
const char *gmt_modload_api_name(unsigned api);
/* NCCL_COLL_INFO's algo and proto by NCCL's names ("RING", "SIMPLE"); "other", "none", "?" */
const char *gmt_nccl_algo_name(unsigned id);
const char *gmt_nccl_proto_name(unsigned id);
const char *gmt_nvtx_op_name(unsigned op);
const char *gmt_nvtx_string_kind_name(unsigned kind);

#endif
