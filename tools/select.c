/* select.c: what the selecting options found in the traces read: each selection matched or not, and the values there are, for the message when one matched nothing. */
#include "select.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

void gmt_seen_init(struct gmt_seen *s)
{
    memset(s, 0, sizeof *s);
}

void gmt_seen_free(struct gmt_seen *s)
{
    for (size_t i = 0; i < s->n_ops; i++)
        free(s->ops[i]);
    for (size_t i = 0; i < s->n_ranges; i++)
        free(s->ranges[i]);
    gmt_seen_init(s);
}

static void note_device(struct gmt_seen *s, int d)
{
    for (size_t i = 0; i < s->n_devices; i++)
        if (s->devices[i] == d)
            return;
    if (s->n_devices < GMT_SEEN_MAX)
        s->devices[s->n_devices++] = d;
    else
        s->more_devices++;
}

/* name (len bytes) into list, once. 0 or -ENOMEM. */
static int note_name(char **list, size_t *n, size_t *more, const char *name, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen(list[i]) == len && !memcmp(list[i], name, len))
            return 0;
    if (*n == GMT_SEEN_MAX) {
        (*more)++;
        return 0;
    }
    char *c = malloc(len + 1);
    if (!c)
        return -ENOMEM;
    memcpy(c, name, len);
    c[len] = 0;
    list[(*n)++] = c;
    return 0;
}

int gmt_seen_add(struct gmt_seen *s, const struct gmt_analysis *a, const struct gmt_report_opts *ro)
{
    const struct gmt_report *rep = &a->rep;
    s->traces++;
    for (size_t d = 0; d < rep->n_dev; d++) {
        if (rep->dev[d].device < 0)
            continue;
        note_device(s, rep->dev[d].device);
        s->dev_match |= rep->dev[d].device == ro->device;
    }
    for (size_t k = 0; k < rep->n_colls; k++) {
        const char *l = rep->colls[k].label;
        s->op_match |= ro->op && gmt_report_coll_selected(ro, &rep->colls[k]);
        if (note_name(s->ops, &s->n_ops, &s->more_ops, l, strnlen(l, sizeof rep->colls[k].label)))
            return -ENOMEM;
    }
    for (size_t k = 0; k < a->phases.n_rows; k++) {
        const struct gmt_phase_row *p = &a->phases.rows[k];
        s->step_match |= p->step;
        if (note_name(s->ranges, &s->n_ranges, &s->more_ranges, p->name, strlen(p->name)))
            return -ENOMEM;
    }
    return 0;
}

int gmt_seen_merge(struct gmt_seen *s, const struct gmt_seen *o)
{
    s->traces += o->traces;
    s->dev_match |= o->dev_match;
    s->op_match |= o->op_match;
    s->step_match |= o->step_match;
    for (size_t i = 0; i < o->n_devices; i++)
        note_device(s, o->devices[i]);
    for (size_t i = 0; i < o->n_ops; i++)
        if (note_name(s->ops, &s->n_ops, &s->more_ops, o->ops[i], strlen(o->ops[i])))
            return -ENOMEM;
    for (size_t i = 0; i < o->n_ranges; i++)
        if (note_name(s->ranges, &s->n_ranges, &s->more_ranges, o->ranges[i], strlen(o->ranges[i])))
            return -ENOMEM;
    s->more_devices += o->more_devices;
    s->more_ops += o->more_ops;
    s->more_ranges += o->more_ranges;
    return 0;
}

/* ---- as bytes, between processes ----
 * A header (the matches, the counts), the devices, then each name as its length and
 * its bytes: ops, then ranges. */

struct seen_head {
    uint8_t dev_match, op_match, step_match, pad;
    uint32_t n_devices, n_ops, n_ranges;
    uint64_t traces, more_devices, more_ops, more_ranges;
};

int gmt_seen_put(FILE *b, const struct gmt_seen *s)
{
    struct seen_head h = {s->dev_match, s->op_match, s->step_match, 0, (uint32_t)s->n_devices,
                          (uint32_t)s->n_ops, (uint32_t)s->n_ranges, s->traces, s->more_devices,
                          s->more_ops, s->more_ranges};
    fwrite(&h, sizeof h, 1, b);
    for (size_t i = 0; i < s->n_devices; i++) {
        int32_t d = s->devices[i];
        fwrite(&d, sizeof d, 1, b);
    }
    for (size_t k = 0; k < 2; k++) {
        char *const *list = k ? s->ranges : s->ops;
        for (size_t i = 0, n = k ? s->n_ranges : s->n_ops; i < n; i++) {
            uint32_t len = (uint32_t)strlen(list[i]);
            fwrite(&len, sizeof len, 1, b);
            fwrite(list[i], 1, len, b);
        }
    }
    return ferror(b) ? -EIO : 0;
}

int gmt_seen_take(struct gmt_seen *s, const char *p, size_t len, size_t *used)
{
    struct seen_head h;
    if (len < sizeof h)
        return -EINVAL;
    memcpy(&h, p, sizeof h);
    size_t at = sizeof h;
    if (h.n_devices > GMT_SEEN_MAX || h.n_ops > GMT_SEEN_MAX || h.n_ranges > GMT_SEEN_MAX ||
        len - at < h.n_devices * sizeof(int32_t))
        return -EINVAL;
    struct gmt_seen o;
    gmt_seen_init(&o);
    o.dev_match = h.dev_match;
    o.op_match = h.op_match;
    o.step_match = h.step_match;
    o.traces = h.traces;
    o.more_devices = h.more_devices;
    o.more_ops = h.more_ops;
    o.more_ranges = h.more_ranges;
    for (uint32_t i = 0; i < h.n_devices; i++, at += sizeof(int32_t)) {
        int32_t d;
        memcpy(&d, p + at, sizeof d);
        note_device(&o, d);
    }
    int r = 0;
    for (uint32_t i = 0; !r && i < h.n_ops + h.n_ranges; i++) {
        uint32_t n;
        if (len - at < sizeof n) {
            r = -EINVAL;
            break;
        }
        memcpy(&n, p + at, sizeof n);
        at += sizeof n;
        if (len - at < n) {
            r = -EINVAL;
            break;
        }
        r = i < h.n_ops ? note_name(o.ops, &o.n_ops, &o.more_ops, p + at, n)
                        : note_name(o.ranges, &o.n_ranges, &o.more_ranges, p + at, n);
        at += n;
    }
    if (!r)
        r = gmt_seen_merge(s, &o);
    gmt_seen_free(&o);
    *used = at;
    return r;
}

/* ---- the message ---- */

/* "0, 1, 3" or "AllReduce, Group(AllReduce)", "and N more", or "none", into buf. */
static const char *listing(char *buf, size_t len, const int *devs, char *const *names, size_t n,
                           size_t more)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && at < len; i++) {
        if (devs)
            at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? ", " : "", devs[i]);
        else
            at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", names[i]);
    }
    if (more && at < len)
        snprintf(buf + at, len - at, " and %zu more", more);
    if (!n && !more)
        snprintf(buf, len, "none");
    return buf;
}

int gmt_seen_check(const struct gmt_seen *s, const struct gmt_report_opts *ro, const char *cmd)
{
    char have[2048], in[64];
    int status = GMT_EXIT_OK;
    if (s->traces == 1)
        snprintf(in, sizeof in, "the trace read");
    else
        snprintf(in, sizeof in, "the %zu traces read", s->traces);
    if (ro->device >= 0 && !s->dev_match) {
        gmt_err("gpumemtrace %s: --device %d matches no device in %s (devices there: %s)", cmd,
                ro->device, in,
                listing(have, sizeof have, s->devices, NULL, s->n_devices, s->more_devices));
        status = GMT_EXIT_ERROR;
    }
    if (ro->op && !s->op_match) {
        gmt_err("gpumemtrace %s: --op %s matches no NCCL call in %s (calls there: %s)", cmd,
                ro->op, in, listing(have, sizeof have, NULL, s->ops, s->n_ops, s->more_ops));
        status = GMT_EXIT_ERROR;
    }
    if (ro->step && !s->step_match) {
        gmt_err("gpumemtrace %s: --step %s matches no NVTX range in %s (ranges there: %s)", cmd,
                ro->step, in,
                listing(have, sizeof have, NULL, s->ranges, s->n_ranges, s->more_ranges));
        status = GMT_EXIT_ERROR;
    }
    return status;
}
