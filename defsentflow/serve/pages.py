"""HTML pages of the web app: Jinja2 templates with autoescaping, no JavaScript (so nothing inline
for a ``script-src 'self'`` policy to refuse).

Every value reaches the page through Jinja2's HTML escaping; numbers go through the report's
:func:`~defsentflow.report.leaderboard.format_number`, so the page and the report agree.
"""

from __future__ import annotations

from typing import Any

from jinja2 import DictLoader, Environment, select_autoescape

from defsentflow.report.leaderboard import format_number

__all__ = ["render"]

_BASE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }} - defsentflow</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #222; line-height: 1.45; }
header { background: #1f3b57; color: #fff; padding: 0.6rem 1.5rem; display: flex; gap: 1.5rem; align-items: baseline; }
header a { color: #dbe8f5; text-decoration: none; } header a.here { color: #fff; font-weight: 600; }
header .brand { font-weight: 700; color: #fff; margin-right: 1rem; }
main { max-width: 80rem; margin: 1.5rem auto; padding: 0 1rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; white-space: nowrap; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.wide { overflow-x: auto; max-width: 100%; }
table.board { font-size: 0.8rem; } table.board th { white-space: normal; vertical-align: bottom; }
table.board th, table.board td { padding: 0.2rem 0.3rem; }
table.board th.group { text-align: center; } th.dev, td.dev { background-color: #f2f7ee; } th.test, td.test { background-color: #fff; }
.side-by-side { display: flex; flex-wrap: wrap; gap: 1.5rem; } .side-by-side .hits { flex: 1 1 30rem; min-width: 0; }
td.definition { white-space: normal; min-width: 14rem; }
form { display: grid; grid-template-columns: 8rem 1fr; gap: 0.5rem 1rem; max-width: 48rem; margin-bottom: 1rem; }
textarea { font: inherit; min-height: 4rem; padding: 0.4rem; } select, input { font: inherit; padding: 0.2rem; }
button { font: inherit; padding: 0.35rem 1.2rem; justify-self: start; }
.error { background: #fdecea; border: 1px solid #f5c2c0; padding: 0.5rem 0.8rem; }
.muted { color: #666; font-size: 0.9rem; }
</style>
</head>
<body>
<header><span class="brand">defsentflow</span>
{% for href, name in nav %}<a href="{{ href }}"{% if href == here %} class="here"{% endif %}>{{ name }}</a>{% endfor %}
</header>
<main>
<h1>{{ title }}</h1>
{% block content %}{% endblock %}
</main>
</body>
</html>
"""

_TABLE = """{% macro table(columns, rows, numeric=()) -%}
<div class="wide"><table>
<thead><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>{% for r in rows %}<tr>{% for v in r %}<td{% if columns[loop.index0] in numeric %} class="num"{% endif %}>{{ v|cell }}</td>{% endfor %}</tr>{% endfor %}</tbody>
</table></div>
{%- endmacro %}"""

_HITS = """{% macro hits_table(served, hits, id) -%}
<div class="hits"><p class="muted">{{ served.label }}: ranked by score ({{ served.mode }} mode); the cosine is the
matched definition's, shown beside it, not what ranks</p>
<div class="wide"><table id="{{ id }}"><thead><tr><th>rank</th><th>entry</th><th title="what ranks the entries">score</th>
<th title="the entry's definition nearest to the query">matched definition</th><th title="its cosine to the query; it does not rank">cosine</th></tr></thead><tbody>
{% for h in hits %}<tr><td class="num">{{ loop.index }}</td><td class="entry">{{ h.entry }}</td><td class="num">{{ "%.4f"|format(h.score) }}</td>
<td class="definition">{{ h.definition or "" }}</td><td class="num">{% if h.definition_score is not none %}{{ "%.3f"|format(h.definition_score) }}{% endif %}</td></tr>{% endfor %}
</tbody></table></div></div>
{%- endmacro %}"""

_REVDICT = """{% extends "base.html" %}{% from "hits.html" import hits_table %}{% block content %}
<p class="muted">Type a definition; the model's reverse-dictionary index returns the entries whose definitions it
places closest, each with the one of its definitions nearest to yours. Pick a second model to see both side by side (the base encoder beside the trained one).</p>
{% if not indexes %}<p class="error">No reverse-dictionary index has been built yet: <code>defsentflow revdict MODEL
"a definition"</code> builds one for a model.</p>{% else %}
<form method="get" action="/revdict">
<label for="q">Definition</label>
<textarea id="q" name="q" maxlength="{{ max_query }}" required>{{ q or "" }}</textarea>
<label for="model">Model</label>
<select id="model" name="model">{% if aliases %}<optgroup label="Aliases">{% for a in aliases %}
<option value="{{ a.alias }}"{% if a.alias == model %} selected{% endif %}>{{ a.alias }}: {{ a.model_id }} since {{ a.since }}</option>{% endfor %}
</optgroup><optgroup label="Models">{% endif %}{% for i in indexes %}
<option value="{{ i.model_id }}"{% if i.model_id == model %} selected{% endif %}>{{ i.label }}</option>{% endfor %}
{% if aliases %}</optgroup>{% endif %}</select>
<label for="beside">Beside it</label>
<select id="beside" name="beside"><option value="">(none)</option>{% for a in aliases %}
<option value="{{ a.alias }}"{% if a.alias == beside %} selected{% endif %}>{{ a.alias }}: {{ a.model_id }}</option>{% endfor %}{% for i in indexes %}
<option value="{{ i.model_id }}"{% if i.model_id == beside %} selected{% endif %}>{{ i.label }}</option>{% endfor %}
</select>
<label for="k">Entries</label>
<input id="k" name="k" type="number" min="1" max="{{ max_k }}" value="{{ k }}">
<span></span><button id="lookup" type="submit">Look up</button>
</form>{% endif %}
{% if example %}<p class="muted" id="example">An example query; type your own above.</p>{% endif %}
{% if error %}<p class="error" id="error">{{ error }}</p>{% endif %}
{% if hits is not none %}<div class="side-by-side">
{{ hits_table(served, hits, "results") }}
{% if beside_hits is not none %}{{ hits_table(beside_served, beside_hits, "beside-results") }}{% endif %}
</div>{% endif %}
{% endblock %}"""

_LEADERBOARD = """{% extends "base.html" %}{% block content %}
{% if rows %}<p class="muted">One row per model (the aliases that name it, in bold, under its id; its other ids in the
last column); {{ note }}. Figures are named
task, protocol, mode, metric under their split; STS: Spearman x 100 ('all' setting); <code>mrr</code>: reverse-dictionary
mean reciprocal rank (0 to 1). A heading without a metric is STS's Spearman; hover a heading for the figure's full name.</p>
<div class="wide"><table id="leaderboard" class="board">
<thead><tr><th colspan="{{ ident|length }}"></th>{% for g in groups %}<th colspan="{{ g.columns|length }}" class="group {{ g.name }}">{{ g.name }}</th>{% endfor %}<th></th></tr>
<tr>{% for c in ident %}<th>{{ c }}</th>{% endfor %}{% for g in groups %}{% for c in g.columns %}<th class="{{ g.name }}" title="{{ c.name }}">{{ c.short }}</th>{% endfor %}{% endfor %}<th>also known as</th></tr></thead>
<tbody>{% for r in rows %}<tr>
<td>{{ r.model_id }}{% for a in r.holds %}<br><strong class="holder">{{ a }}</strong>{% endfor %}</td><td>{{ r.pooling or "" }}</td><td>{{ r.method or "" }}</td>
<td>{% if r.run_id %}<a class="run" href="{{ r.run_href }}">{{ r.run_id }}</a>{% endif %}</td>
{% for g in groups %}{% for c in g.columns %}<td class="num {{ g.name }}">{{ r.get(c.name)|cell }}</td>{% endfor %}{% endfor %}
<td>{{ r.aliases|reject("equalto", r.model_id)|reject("in", r.holds)|join(", ") }}</td></tr>{% endfor %}</tbody>
</table></div>{% else %}<p>No evaluation results yet.</p>{% endif %}
{% endblock %}"""

_RUNS = """{% extends "base.html" %}{% from "table.html" import table %}{% block content %}
{% if runs %}<div class="wide"><table>
<thead><tr><th>run</th><th>name</th><th>flow</th><th>status</th><th>started</th><th>seconds</th><th>selected model</th>
<th>selection</th><th>champion</th><th>report</th></tr></thead><tbody>
{% for r in runs %}<tr id="run-{{ r.run_id }}"><td>{{ r.run_id }}</td><td>{{ r.name or "" }}</td><td>{{ r.flow }}</td><td>{{ r.status }}{% if r.reason %}<br><span class="muted">{{ r.reason }}</span>{% endif %}</td>
<td>{{ r.started_at|cell }}</td><td class="num">{{ r.seconds|cell }}</td><td>{{ r.selected_model or "" }}</td>
<td>{{ r.selection_metric or "" }} {{ r.selection_score|cell }}</td>
<td>{{ r.champion or "" }}{% if r.promotion_note %}<br><span class="muted">{{ r.promotion_note }}</span>{% endif %}</td>
<td>{% if r.has_report %}<a href="/runs/{{ r.run_id|urlencode }}/report/report.html">report</a>{% endif %}</td></tr>{% endfor %}
</tbody></table></div>{% else %}<p>No runs yet.</p>{% endif %}
{% endblock %}"""

_SWEEPS = """{% extends "base.html" %}{% from "table.html" import table %}{% block content %}
{% for s in sweeps %}<h2>{{ s.sweep }}</h2><p class="muted">{{ s.n_points }} points, updated {{ s.updated_at|cell }}</p>
{{ table(s.columns, s.rows, s.numeric) }}{% else %}<p>No sweeps yet (<code>defsentflow sweep run SWEEP.yaml</code>).</p>
{% endfor %}{% endblock %}"""

NAV = (("/revdict", "Reverse dictionary"), ("/leaderboard", "Leaderboard"), ("/runs", "Runs"), ("/sweeps", "Sweeps"))


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return format_number(v)
    return str(v)[:19] if hasattr(v, "isoformat") else str(v)


_ENV = Environment(loader=DictLoader({"base.html": _BASE, "table.html": _TABLE, "revdict.html": _REVDICT, "hits.html": _HITS,
                                      "leaderboard.html": _LEADERBOARD, "runs.html": _RUNS, "sweeps.html": _SWEEPS}),
                   autoescape=select_autoescape(default=True, default_for_string=True))
_ENV.filters["cell"] = _cell


def render(template: str, *, here: str, **context: Any) -> str:
    """The page ``template`` (``revdict.html``, ``leaderboard.html``, ...) with the navigation."""
    return _ENV.get_template(template).render(nav=NAV, here=here, **context)
