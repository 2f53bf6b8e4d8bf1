/* manpage.c: man pages and shell completion made from the command table and each command's --help text, so the three never disagree. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util.h"

/*
 * `gpumemtrace __man [COMMAND]` writes gpumemtrace(1) or gpumemtrace-COMMAND(1) in roff,
 * `gpumemtrace __complete bash|zsh` a completion script: the build runs them (mk/
 * install.mk), nobody types them. What they know comes from GMT_COMMANDS and from the
 * text `COMMAND --help` prints, read by the rules that text keeps:
 *   - "usage: gpumemtrace ..." and lines of more usages below it: the synopsis; the
 *     options written in it (`[--expand]`, `--format F`) are options of the command;
 *   - a line "options:" opens the options: each entry a line of two spaces and the
 *     option ("-o, --output DIR"), its argument in capitals, then its meaning, which
 *     goes on in lines indented deeper; the list ends at a line that is not indented;
 *   - anything else is prose, and its indented lines are a table kept as it is laid out.
 */

struct cmd {
    const char *name, *summary, *help;
};

static const struct cmd cmds[] = {
#define GMT_X(name, summary) {#name, summary, gmt_help_##name},
    GMT_COMMANDS(GMT_X)
#undef GMT_X
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

#define MAX_OPTS 48
#define MAX_LINE 512

struct opt {
    char names[4][40]; /* "-o", "--output" */
    int nnames;
    char arg[40];      /* "DIR", "" for none */
    char desc[1024];   /* the meaning, its lines joined */
};

/* One line of text at *p (without its newline) into buf; advances *p. false at the end. */
static bool next_line(const char **p, char *buf, size_t cap)
{
    if (!**p)
        return false;
    const char *e = strchr(*p, '\n');
    size_t n = e ? (size_t)(e - *p) : strlen(*p);
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), *p);
    *p += n + (e ? 1 : 0);
    return true;
}

static size_t indent(const char *s)
{
    size_t n = 0;
    while (s[n] == ' ')
        n++;
    return n;
}

static bool is_usage(const char *line, bool first)
{
    return first ? strncmp(line, "usage: gpumemtrace", 18) == 0
                 : strncmp(line, "       gpumemtrace", 18) == 0;
}

/* An option's argument: a word in capitals ("DIR", "NAME=GLOB", "SEC"). */
static bool is_metavar(const char *w, size_t n)
{
    if (!n || !isupper((unsigned char)w[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isupper((unsigned char)w[i]) && !isdigit((unsigned char)w[i]) && !strchr("_=|.,-", w[i]))
            return false;
    return true;
}

static bool is_option(const char *w, size_t n)
{
    return n >= 2 && w[0] == '-' && (isalpha((unsigned char)w[1]) ||
                                     (n >= 3 && w[1] == '-' && isalpha((unsigned char)w[2])));
}

/* An entry line "  -o, --output DIR   meaning" into o; false when it is not one. */
static bool parse_entry(const char *line, struct opt *o)
{
    memset(o, 0, sizeof *o);
    const char *p = line + indent(line);
    if (*p != '-')
        return false;
    for (;;) {
        size_t n = strcspn(p, " ,");
        if (is_option(p, n) && o->nnames < 4) {
            snprintf(o->names[o->nnames++], sizeof o->names[0], "%.*s", (int)n, p);
        } else if (o->nnames && !o->arg[0] && is_metavar(p, n)) {
            snprintf(o->arg, sizeof o->arg, "%.*s", (int)n, p);
        } else {
            break;
        }
        p += n;
        if (*p == ',')
            p++;
        while (*p == ' ')
            p++;
        if (*p != '-' && !isupper((unsigned char)*p))
            break;
        if (o->arg[0] && *p != '-')
            break;
    }
    snprintf(o->desc, sizeof o->desc, "%s", p);
    return o->nnames > 0;
}

/* The options of a command's help text: its entries, then those its usage lines name. */
static int parse_opts(const char *help, struct opt *out, int max)
{
    char line[MAX_LINE];
    const char *p = help;
    int n = 0;
    bool in_opts = false, usage = true, first = true;
    while (next_line(&p, line, sizeof line)) {
        if (usage && is_usage(line, first)) {
            first = false;
            /* the options a usage line names, with their argument when it has one */
            for (const char *w = line; *w;) {
                while (*w && (*w == ' ' || *w == '['))
                    w++;
                size_t len = strcspn(w, " ]");
                if (is_option(w, len) && n < max) {
                    bool dup = false;
                    for (int i = 0; i < n; i++)
                        for (int j = 0; j < out[i].nnames; j++)
                            dup |= strlen(out[i].names[j]) == len && !strncmp(out[i].names[j], w, len);
                    if (!dup) {
                        memset(&out[n], 0, sizeof out[n]);
                        snprintf(out[n].names[0], sizeof out[n].names[0], "%.*s", (int)len, w);
                        out[n].nnames = 1;
                        const char *a = w + len;
                        if (*a == ' ' && is_metavar(a + 1, strcspn(a + 1, " ]")))
                            snprintf(out[n].arg, sizeof out[n].arg, "%.*s", (int)strcspn(a + 1, " ]"), a + 1);
                        n++;
                    }
                }
                w += len;
                while (*w == ']')
                    w++;
            }
            continue;
        }
        usage = false;
        if (strcmp(line, "options:") == 0) {
            in_opts = true;
            continue;
        }
        if (!in_opts)
            continue;
        if (!line[0] || indent(line) == 0) {
            in_opts = false;
            continue;
        }
        struct opt o;
        if (indent(line) == 2 && parse_entry(line, &o)) {
            /* an entry replaces what a usage line said of the same option */
            int at = n;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < o.nnames; j++)
                    if (!strcmp(out[i].names[0], o.names[j]))
                        at = i;
            if (at < max) {
                out[at] = o;
                n += at == n;
            }
        } else if (n) {
            size_t l = strlen(out[n - 1].desc);
            /* an option alone on its line: its meaning starts on the next */
            snprintf(out[n - 1].desc + l, sizeof out[n - 1].desc - l, "%s%s", l ? " " : "",
                     line + indent(line));
        }
    }
    /* every command takes --help */
    int at_help = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(out[i].names[0], "--help"))
            at_help = i;
    if (at_help < 0 && n < max) {
        at_help = n++;
        memset(&out[at_help], 0, sizeof out[at_help]);
        snprintf(out[at_help].names[0], sizeof out[at_help].names[0], "--help");
        out[at_help].nnames = 1;
    }
    if (at_help >= 0 && !out[at_help].desc[0])
        snprintf(out[at_help].desc, sizeof out[at_help].desc, "what the command does and takes, in short");
    return n;
}

/* ---- roff ---- */

/* Text for roff: backslashes and hyphens escaped, a line never starting with a control
 * character. */
static void roff(FILE *o, const char *s, bool line_start)
{
    if (line_start && (*s == '.' || *s == '\''))
        fputs("\\&", o);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", o);
        else if (*s == '-')
            fputs("\\-", o);
        else
            fputc(*s, o);
    }
}

static void roff_upper(FILE *o, const char *s)
{
    for (; *s; s++)
        if (*s == '-')
            fputs("\\-", o);
        else
            fputc(toupper((unsigned char)*s), o);
}

static void man_header(FILE *o, const char *page, const char *summary)
{
    fputs(".TH ", o);
    roff_upper(o, page);
    fprintf(o, " 1 \"\" \"gpumemtrace %s\" \"gpumemtrace manual\"\n", GMT_CLI_VERSION);
    fputs(".SH NAME\n", o);
    roff(o, page, true);
    fputs(" \\- ", o);
    roff(o, summary, false);
    fputc('\n', o);
}

static void man_option(FILE *o, const struct opt *op)
{
    fputs(".TP\n", o);
    for (int i = 0; i < op->nnames; i++) {
        fputs(i ? ", \\fB" : "\\fB", o);
        roff(o, op->names[i], false);
        fputs("\\fR", o);
    }
    if (op->arg[0]) {
        fputs(" \\fI", o);
        roff(o, op->arg, false);
        fputs("\\fR", o);
    }
    fputc('\n', o);
    roff(o, op->desc[0] ? op->desc : "described under DESCRIPTION", true);
    fputc('\n', o);
}

/* A usage line of command c's help, in the synopsis: "gpumemtrace" and the command's
 * name (when the line names it) in bold. */
static void man_usage(FILE *o, const struct cmd *c, const char *line)
{
    const char *u = line + 7; /* "usage: " or as many spaces */
    size_t nl = strlen(c->name);
    fputs("\\fB", o);
    roff(o, "gpumemtrace ", true);
    if (strlen(u) < 12) {
        u += strlen(u);
    } else if (!strncmp(u + 12, c->name, nl) && (u[12 + nl] == ' ' || !u[12 + nl])) {
        roff(o, c->name, false);
        u += 12 + nl;
    } else {
        u += 12;
    }
    fputs("\\fR", o);
    roff(o, u, false);
    fputc('\n', o);
}

static int man_command(FILE *o, const struct cmd *c)
{
    char page[64], line[MAX_LINE];
    snprintf(page, sizeof page, "gpumemtrace-%s", c->name);
    man_header(o, page, c->summary);
    struct opt opts[MAX_OPTS];
    int nopts = parse_opts(c->help, opts, MAX_OPTS);

    const char *p = c->help;
    bool first = true, in_opts = false, after_opts = false, table = false, para = false,
         opts_done = false;
    const char *section = "DESCRIPTION";
    fputs(".SH SYNOPSIS\n.nf\n", o);
    while (next_line(&p, line, sizeof line)) {
        if (is_usage(line, first)) {
            first = false;
            man_usage(o, c, line);
            continue;
        }
        if (!first && section) {
            fputs(".fi\n.SH ", o);
            fputs(section, o);
            fputc('\n', o);
            section = NULL;
        }
        if (strcmp(line, "options:") == 0) {
            if (table)
                fputs(".fi\n.RE\n", o);
            table = false;
            fputs(".SH OPTIONS\n", o);
            for (int i = 0; i < nopts; i++)
                man_option(o, &opts[i]);
            in_opts = opts_done = true;
            continue;
        }
        if (in_opts) {
            if (line[0] && indent(line) > 0)
                continue;
            in_opts = false;
            after_opts = true;
        }
        if (after_opts && line[0]) {
            fputs(strncmp(line, "Exit status", 11) == 0 ? ".SH EXIT STATUS\n" : ".SH NOTES\n", o);
            para = after_opts = false;
        }
        if (!line[0]) {
            if (table)
                fputs(".fi\n.RE\n", o);
            table = para = false;
            continue;
        }
        if (opts_done && !after_opts && strncmp(line, "Exit status", 11) == 0 && !table) {
            fputs(".SH EXIT STATUS\n", o);
            para = false;
        }
        if (indent(line) > 0 && !table) {
            fputs(".RS 2\n.nf\n", o);
            table = true;
        } else if (indent(line) == 0 && table) {
            fputs(".fi\n.RE\n", o);
            table = false;
        }
        if (!table && !para) {
            fputs(".PP\n", o);
            para = true;
        }
        roff(o, line, true);
        fputc('\n', o);
    }
    if (table)
        fputs(".fi\n.RE\n", o);
    if (section) /* the help was nothing but its usage */
        fputs(".fi\n", o);
    if (!opts_done && nopts) {
        fputs(".SH OPTIONS\n", o);
        for (int i = 0; i < nopts; i++)
            man_option(o, &opts[i]);
    }
    fputs(".SH SEE ALSO\n\\fBgpumemtrace\\fR(1)\n", o);
    return GMT_EXIT_OK;
}

static int man_overview(FILE *o)
{
    man_header(o, "gpumemtrace", "where the GPU memory went, and which NCCL call took it");
    fputs(".SH SYNOPSIS\n.nf\n\\fBgpumemtrace\\fR [\\fB\\-\\-help\\fR] [\\fB\\-\\-version\\fR] "
          "\\fICOMMAND\\fR [\\fIARGS\\fR]\n.fi\n.SH DESCRIPTION\n.PP\n", o);
    roff(o, GMT_CLI_ABOUT, true);
    fputs("\n.PP\n", o);
    roff(o, "The traces come from libgpumemtrace.so, preloaded into the training job: "
            "'gpumemtrace run -- COMMAND' does it, or LD_PRELOAD. One trace is written "
            "per process that touched CUDA or NCCL.", true);
    fputs("\n.SH COMMANDS\n", o);
    for (size_t i = 0; i < NCMDS; i++) {
        fputs(".TP\n\\fBgpumemtrace\\-", o);
        roff(o, cmds[i].name, false);
        fputs("\\fR(1)\n", o);
        roff(o, cmds[i].summary, true);
        fputc('\n', o);
    }
    fputs(".SH OPTIONS\n.TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nthe commands, one line each\n"
          ".TP\n\\fB\\-V\\fR, \\fB\\-\\-version\\fR\nthe version and the trace format it reads\n"
          ".SH EXIT STATUS\n", o);
    roff(o, GMT_CLI_EXIT_STATUS, true);
    fputs("\n.SH SEE ALSO\n", o);
    for (size_t i = 0; i < NCMDS; i++)
        fprintf(o, "\\fBgpumemtrace\\-%s\\fR(1)%s\n", cmds[i].name, i + 1 < NCMDS ? "," : "");
    return GMT_EXIT_OK;
}

/* ---- completion ---- */

/* Words inside a bash double-quoted string: the options hold none that need escaping,
 * and this keeps it so. */
static void bash_word(FILE *o, const char *s)
{
    for (; *s; s++)
        if (isalnum((unsigned char)*s) || *s == '-' || *s == '_')
            fputc(*s, o);
}

static int complete_bash(FILE *o)
{
    fputs("# bash completion for gpumemtrace (made by 'gpumemtrace __complete bash')\n"
          "_gpumemtrace()\n{\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} cmd= i\n"
          "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
          "        case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break ;; esac\n"
          "    done\n"
          "    if [[ -z $cmd ]]; then\n"
          "        COMPREPLY=($(compgen -W \"", o);
    for (size_t i = 0; i < NCMDS; i++) {
        bash_word(o, cmds[i].name);
        fputc(' ', o);
    }
    fputs("help --help --version\" -- \"$cur\"))\n        return\n    fi\n"
          "    local opts=\n    case $cmd in\n", o);
    for (size_t i = 0; i < NCMDS; i++) {
        struct opt opts[MAX_OPTS];
        int n = parse_opts(cmds[i].help, opts, MAX_OPTS);
        fputs("    ", o);
        bash_word(o, cmds[i].name);
        fputs(") opts=\"", o);
        for (int k = 0; k < n; k++)
            for (int j = 0; j < opts[k].nnames; j++) {
                bash_word(o, opts[k].names[j]);
                fputc(' ', o);
            }
        fputs("\" ;;\n", o);
    }
    fputs("    help) COMPREPLY=($(compgen -W \"", o);
    for (size_t i = 0; i < NCMDS; i++) {
        bash_word(o, cmds[i].name);
        fputc(i + 1 < NCMDS ? ' ' : '"', o);
    }
    fputs(" -- \"$cur\")); return ;;\n    esac\n"
          "    if [[ $cmd == run ]]; then\n"
          "        local j\n"
          "        for ((j = i + 1; j < COMP_CWORD; j++)); do\n"
          "            if [[ ${COMP_WORDS[j]} == -- ]]; then\n"
          "                COMPREPLY=($(compgen -c -- \"$cur\")); return\n"
          "            fi\n"
          "        done\n"
          "    fi\n"
          "    if [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "    else\n"
          "        compopt -o filenames 2>/dev/null\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "}\n"
          "complete -F _gpumemtrace gpumemtrace\n", o);
    return GMT_EXIT_OK;
}

/* A zsh description inside '...' and an _arguments [...]: its first clause (up to a
 * colon, a semicolon, a parenthesis or the end of a sentence), no quote or bracket. */
static void zsh_text(FILE *o, const char *s, size_t max)
{
    size_t n = strcspn(s, ":;([");
    const char *dot = strstr(s, ". ");
    if (dot && (size_t)(dot - s) < n)
        n = (size_t)(dot - s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == ',' || s[n - 1] == '.'))
        n--;
    for (size_t i = 0; i < n && i < max; i++)
        fputc(s[i] == '\'' || s[i] == ']' || s[i] == '\\' || s[i] == '`' ? ' ' : s[i], o);
}

/* An argument that names a file or directory is completed as one. */
static bool names_file(const char *arg)
{
    return strstr(arg, "DIR") || strstr(arg, "PATH") || strstr(arg, "FILE") || strstr(arg, "OUT");
}

static int complete_zsh(FILE *o)
{
    fputs("#compdef gpumemtrace\n"
          "# zsh completion for gpumemtrace (made by 'gpumemtrace __complete zsh')\n"
          "_gpumemtrace() {\n"
          "  local -a commands opts\n"
          "  commands=(\n", o);
    for (size_t i = 0; i < NCMDS; i++) {
        fputs("    '", o);
        zsh_text(o, cmds[i].name, 64);
        fputc(':', o);
        zsh_text(o, cmds[i].summary, 200);
        fputs("'\n", o);
    }
    fputs("  )\n"
          "  if (( CURRENT == 2 )); then\n"
          "    _describe -t commands 'gpumemtrace command' commands\n"
          "    return\n"
          "  fi\n"
          "  case ${words[2]} in\n", o);
    for (size_t i = 0; i < NCMDS; i++) {
        struct opt opts[MAX_OPTS];
        int n = parse_opts(cmds[i].help, opts, MAX_OPTS);
        fputs("  ", o);
        zsh_text(o, cmds[i].name, 64);
        fputs(") opts=(\n", o);
        for (int k = 0; k < n; k++)
            for (int j = 0; j < opts[k].nnames; j++) {
                fputs("    '", o);
                zsh_text(o, opts[k].names[j], 40);
                fputc('[', o);
                zsh_text(o, opts[k].desc[0] ? opts[k].desc : opts[k].names[j], 72);
                fputc(']', o);
                if (opts[k].arg[0]) {
                    fputc(':', o);
                    zsh_text(o, opts[k].arg, 40);
                    fputs(names_file(opts[k].arg) ? ":_files" : ": ", o);
                }
                fputs("'\n", o);
            }
        fputs("  ) ;;\n", o);
    }
    fputs("  help) _describe -t commands 'gpumemtrace command' commands; return ;;\n"
          "  *) return 1 ;;\n"
          "  esac\n"
          "  if [[ ${words[2]} == run ]]; then\n"
          "    _arguments -s -S $opts '*::command:_normal'\n"
          "  else\n"
          "    _arguments -s $opts '*:trace:_files'\n"
          "  fi\n"
          "}\n"
          "_gpumemtrace \"$@\"\n", o);
    return GMT_EXIT_OK;
}

int gmt_help_generate(int argc, char **argv)
{
    if (strcmp(argv[0], "__man") == 0) {
        if (argc == 1)
            return man_overview(stdout);
        for (size_t i = 0; argc == 2 && i < NCMDS; i++)
            if (strcmp(argv[1], cmds[i].name) == 0)
                return man_command(stdout, &cmds[i]);
        gmt_err("gpumemtrace __man: one command of 'gpumemtrace --help', or none");
        return GMT_EXIT_ERROR;
    }
    if (argc == 2 && strcmp(argv[1], "bash") == 0)
        return complete_bash(stdout);
    if (argc == 2 && strcmp(argv[1], "zsh") == 0)
        return complete_zsh(stdout);
    gmt_err("gpumemtrace __complete: bash or zsh");
    return GMT_EXIT_ERROR;
}
