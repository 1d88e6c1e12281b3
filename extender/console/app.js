// The taskgov console: Dashboard, Tasks and Policies over the admin API (/api/v1/, see
// extender/ADMIN_API.md). Plain DOM, no framework, nothing loaded from elsewhere; every text from
// the cluster goes in through textContent. Pages refresh every few seconds unless paused.
'use strict';

const REFRESH_MS = 5000;
const TOKEN_KEY = 'taskgov-token';

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  paused: false,
  timer: 0,
  failures: 0,
  sort: {key: 'queue', up: true},
  renders: 0,  // renders started: one that a later one overtook shows nothing
};

// ---- small helpers ----

// el('td', {class: 'num'}, 'text', child, ...): an element with attributes and children.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// A Kubernetes quantity ("8", "1500m", "1152Gi", "2k") as a number; null stays null.
function quantity(q) {
  if (q === null || q === undefined) return null;
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(String(q));
  if (!m) return NaN;
  const units = {
    '': 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15,
    Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50,
  };
  return parseFloat(m[1]) * (units[m[2]] ?? NaN);
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return '';
  if (seconds < 60) return seconds + 's';
  if (seconds < 3600) return Math.floor(seconds / 60) + 'm ' + (seconds % 60) + 's';
  if (seconds < 86400) return Math.floor(seconds / 3600) + 'h ' + Math.floor(seconds % 3600 / 60) + 'm';
  return Math.floor(seconds / 86400) + 'd ' + Math.floor(seconds % 86400 / 3600) + 'h';
}

function requestText(request) {
  return Object.entries(request || {}).map(([r, q]) => q + ' ' + r).join(', ');
}

function percent(part, whole) {
  return whole > 0 ? Math.round(100 * part / whole) + '%' : '–';
}

// ---- the API ----

class Unauthorized extends Error {}
// The extender did not answer at all (it went away, or the network between): the page keeps
// what it showed, marked stale.
class Unreachable extends Error {}

async function api(path) {
  const headers = state.token ? {Authorization: 'Bearer ' + state.token} : {};
  let reply;
  try {
    reply = await fetch(path, {headers, cache: 'no-store'});
  } catch (e) {
    throw new Unreachable(path + ': ' + e.message);
  }
  let body = null;
  try {
    body = await reply.json();
  } catch (e) {
    throw new Error(path + ': the reply is not JSON (status ' + reply.status + ')');
  }
  if (reply.status === 401 || reply.status === 403) {
    showLogin((body && body.error) || 'access refused');
    throw new Unauthorized(body && body.error);
  }
  if (!reply.ok) throw new Error(path + ': ' + ((body && body.error) || reply.status));
  return body;
}

function showLogin(reason) {
  const dialog = document.getElementById('login');
  document.getElementById('login-reason').textContent = reason;
  if (!dialog.open) dialog.showModal();
  document.getElementById('token').focus();
}

// Shows `message` above the page ("" hides it).
function showError(message) {
  const box = document.getElementById('errors');
  box.hidden = !message;
  box.textContent = message;
}

// A request that failed: shown and counted (data-failed-requests).
function noteFailure(message) {
  state.failures++;
  document.body.dataset.failedRequests = String(state.failures);
  showError(message);
}

// ---- routing ----

// "#/tasks?team=a" → {page: 'tasks', rest: [], params: URLSearchParams}
function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query] = hash.split('?');
  const parts = (path || 'dashboard').split('/').filter(Boolean).map(decodeURIComponent);
  return {page: parts[0] || 'dashboard', rest: parts.slice(1), params: new URLSearchParams(query || '')};
}

function setParam(name, value) {
  const r = route();
  if (value) r.params.set(name, value); else r.params.delete(name);
  const q = r.params.toString();
  location.hash = '#/' + [r.page, ...r.rest].map(encodeURIComponent).join('/') + (q ? '?' + q : '');
}

const pages = {dashboard: renderDashboard, tasks: renderTasks, policies: renderPolicies};

async function render() {
  const mine = ++state.renders;
  const r = route();
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.page === r.page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const page = pages[r.page];
  const main = document.getElementById('main');
  if (!page) {
    showPageError(main, 'No such page', 'The console has no page ' + location.hash + '.');
    showError('');
    rendered();
    return;
  }
  try {
    // A page's parts; a part it has nothing for is null (never shown as text).
    const view = (await page(r)).filter(part => part !== null && part !== undefined && part !== false);
    // A render started while this one waited for the API (a refresh, then a click on another
    // page) is the one to show: this one's page must not replace it.
    if (mine !== state.renders) return;
    main.replaceChildren(...view);
    delete main.dataset.stale;
    showError('');
    state.updatedAt = new Date().toLocaleTimeString();
    document.getElementById('updated').textContent = 'Updated ' + state.updatedAt;
    document.body.dataset.page = r.page;
    document.body.dataset.ready = 'true';
  } catch (e) {
    if (mine !== state.renders) return;
    if (e instanceof Unauthorized) {
      // the sign-in dialog says why
    } else if (e instanceof Unreachable) {
      // What is shown stays, said to be stale: a person may still read it.
      main.dataset.stale = 'true';
      noteFailure('The extender is not answering (' + e.message + '): what this page shows is ' +
        (state.updatedAt ? 'from ' + state.updatedAt : 'not loaded') + ' and may be stale.');
    } else {
      // This page cannot be shown (a bad filter, a task that is gone): say so in its place.
      showPageError(main, 'This page cannot be shown', e.message);
      noteFailure(e.message);
    }
  } finally {
    if (mine === state.renders) rendered();
  }
}

function showPageError(main, title, message) {
  delete main.dataset.stale;
  main.replaceChildren(el('h2', {}, title), el('p', {class: 'page-error'}, message),
    el('p', {}, el('a', {href: '#/dashboard'}, 'Dashboard'), ' · ', el('a', {href: '#/tasks'}, 'Tasks')));
}

// A filter naming a team the policy does not have: said, instead of empty tables.
function unknownTeam(team, teams) {
  return el('p', {class: 'page-error', id: 'unknown-filter'}, 'No team ' + team +
    ' in the policy in force; its teams are ' + teams.items.map(t => t.name).join(', ') + '.');
}

// Marks the end of a render, whatever its outcome: the route shown and a count (for a person
// reading the DOM, and for the browser tests, which wait for them).
function rendered() {
  document.body.dataset.route = location.hash;
  document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
}

function schedule() {
  clearTimeout(state.timer);
  if (!state.paused) state.timer = setTimeout(async () => { await render(); schedule(); }, REFRESH_MS);
}

// ---- Dashboard ----

async function renderDashboard(r) {
  const [cluster, teams, workloads] = await Promise.all([
    api('/api/v1/cluster'), api('/api/v1/teams'), api('/api/v1/workloads?limit=1000')]);
  const teamFilter = r.params.get('team') || '';
  const flavorFilter = r.params.get('flavor') || '';
  const resources = [...new Set(teams.items.flatMap(t => t.quotas.map(q => q.resource)))];
  const resource = r.params.get('resource') || resources.find(x => /gpu|neuron|accelerator/i.test(x)) || resources[0] || 'cpu';
  const query = new URLSearchParams({resource});
  if (teamFilter) query.set('team', teamFilter);
  if (flavorFilter) query.set('flavor', flavorFilter);
  const history = await api('/api/v1/history?' + query).catch(e => {
    if (e instanceof Unauthorized) throw e;
    return null;  // an extender without history: no trend
  });
  const out = [el('h2', {}, 'Dashboard')];

  out.push(el('section', {'aria-labelledby': 'cluster-h'},
    el('h3', {id: 'cluster-h'}, 'Cluster'),
    el('div', {class: 'cards'}, cluster.flavors
      .filter(f => !flavorFilter || f.name === flavorFilter)
      .map(f => el('article', {class: 'card', 'data-flavor': f.name},
        el('h4', {}, f.name || '(no instance type)'),
        el('p', {class: 'muted'}, f.nodes + (f.nodes === 1 ? ' node' : ' nodes') +
          (f.nodes === 0 ? ' (quota for capacity not in the cluster yet)' : '') +
          (f.nodes > 0 && Object.keys(f.nominalQuota).length === 0 ? ' (no team has quota on it)' : '') +
          (f.schedulableNodes < f.nodes ? ', ' + (f.nodes - f.schedulableNodes) + ' unschedulable' : '')),
        Object.keys(f.allocatable).length === 0 ? el('p', {}, 'No allocatable capacity') :
          el('dl', {class: 'meters'}, Object.entries(f.allocatable).flatMap(([res, alloc]) => {
            const used = quantity(f.inUse[res] || '0');
            const total = quantity(alloc);
            return [el('dt', {}, res), el('dd', {},
              meter(used, total),
              el('span', {class: 'num'}, (f.inUse[res] || '0') + ' of ' + alloc + ' in use (' + percent(used, total) + ')'))];
          })))))));

  const flavors = [...new Set([...cluster.flavors.map(f => f.name),
    ...teams.items.flatMap(t => t.quotas.map(q => q.flavor))])].filter(Boolean).sort();
  out.push(el('div', {class: 'filters', role: 'group', 'aria-label': 'Filters'},
    select('Team', 'team', teamFilter, teams.items.map(t => t.name)),
    select('Instance type', 'flavor', flavorFilter, flavors),
    select('Trend of', 'resource', r.params.get('resource') || '', resources)));
  if (history) out.push(trend(history, resource));

  const shown = teams.items.filter(t => !teamFilter || t.name === teamFilter);
  if (teamFilter && shown.length === 0) out.push(unknownTeam(teamFilter, teams));
  out.push(teamsSection(shown, workloads.items, flavorFilter));
  if (shown.some(t => t.window)) out.push(windowSection(shown));

  out.push(el('section', {'aria-labelledby': 'alloc-h'},
    el('h3', {id: 'alloc-h'}, 'Allocation'),
    el('p', {class: 'legend'}, legend('nominal', 'allocated'), legend('used', 'used'),
      legend('borrowed', 'borrowed'), legend('lent', 'lent to others')),
    el('table', {class: 'alloc'},
      el('thead', {}, el('tr', {},
        ['Team', 'Instance type', 'Resource', 'Allocated', 'Used', 'Borrowed', 'Lent', 'Share', '']
          .map(h => el('th', h === 'Share' ? {scope: 'col', title: SHARE_MEANS} : {scope: 'col'}, h)))),
      el('tbody', {}, shown.flatMap(t => t.quotas
        .filter(q => !flavorFilter || q.flavor === flavorFilter)
        .map(q => el('tr', {'data-team': t.name, 'data-resource': q.resource},
          el('th', {scope: 'row'}, t.name),
          el('td', {}, q.flavor),
          el('td', {}, q.resource),
          el('td', {class: 'num'}, q.nominal),
          el('td', {class: 'num'}, q.usage),
          el('td', {class: 'num'}, q.borrowed),
          el('td', {class: 'num'}, q.lent),
          el('td', {class: 'num'}, shareText(t.weightedShare[q.flavor])),
          el('td', {}, allocationBar(q))))))),
    el('p', {class: 'muted', id: 'share-means'}, 'Share: ' + SHARE_MEANS),
    el('p', {}, el('button', {type: 'button', id: 'usage-report', onclick: downloadUsageReport},
      'Download the usage report (CSV)'), ' ', el('span', {class: 'muted'},
      'allocated, used and borrowed hours per team, instance type, resource and day (GPUs in ' +
      'device-hours, cpu in core-hours, memory in GiB-hours), the last 31 days'))));
  return out;
}

// Fetches /api/v1/reports/usage.csv with the session's token (a plain link could not send it)
// and hands it to the browser as a download; returns its text.
async function downloadUsageReport() {
  const headers = state.token ? {Authorization: 'Bearer ' + state.token} : {};
  const reply = await fetch('/api/v1/reports/usage.csv', {headers, cache: 'no-store'});
  const text = await reply.text();
  if (!reply.ok) {
    noteFailure('/api/v1/reports/usage.csv: ' + reply.status + ' ' + text);
    return text;
  }
  const link = el('a', {href: URL.createObjectURL(new Blob([text], {type: 'text/csv'})),
    download: 'taskgov-usage.csv', hidden: true});
  document.body.append(link);
  link.click();
  link.remove();
  URL.revokeObjectURL(link.href);
  return text;
}

// The one definition of the unit every surface shows a share in (refusals, explanations, events,
// taskgov_weighted_share, the CLI): a fraction with three decimals.
const SHARE_MEANS = 'the weighted share — what a team borrows on the instance type over what ' +
  'its cohort can lend there, divided by its fair-share weight (0.000 within its nominal quota). ' +
  'Idle capacity goes first to the lower share; refusals and explanations state shares the same ' +
  'way.';

// Per team: its pods and workloads now, running and waiting, and its pods preempted. With an
// instance type chosen, the teams with quota or workloads there and their pods and workloads
// there (from the workloads' flavor and pod states); preemptions are counted per team only.
function teamsSection(shown, workloads, flavor) {
  const byTeam = {};
  for (const w of workloads) {
    if (!flavor || w.flavor === flavor) (byTeam[w.team] = byTeam[w.team] || []).push(w);
  }
  const teams = flavor ? shown.filter(t => byTeam[t.name] || t.quotas.some(q => q.flavor === flavor)) : shown;
  const sum = (ws, f) => ws.reduce((s, w) => s + f(w), 0);
  const row = t => {
    const mine = byTeam[t.name] || [];
    const pending = mine.filter(w => w.state === 'Pending');
    const wait = pending.length ? Math.round(sum(pending, w => w.waitSeconds) / pending.length) : null;
    const counts = flavor ? {
      running: sum(mine, w => w.podStates.Running),
      pending: sum(mine, w => w.podStates.Pending),
      workloads: pending.length,
    } : {running: t.pods.running, pending: t.pods.pending, workloads: t.workloads.pending};
    const perTeam = flavor ? {title: 'counted per team, on every instance type'} : {};
    return el('tr', {'data-team': t.name},
      el('th', {scope: 'row'}, el('a', {href: '#/tasks?team=' + encodeURIComponent(t.name)}, t.name)),
      el('td', {class: 'num'}, counts.running),
      el('td', {class: 'num'}, counts.pending),
      el('td', {class: 'num'}, counts.workloads),
      el('td', {class: 'num'}, wait === null ? '–' : duration(wait)),
      // The team's own pods preempted (it is the victim): being evicted now, and in all.
      el('td', {class: 'num', ...perTeam}, t.pods.preempted),
      el('td', {class: 'num', title: preemptionReasons(t.preemptions)}, t.preemptions.total));
  };
  return el('section', {'aria-labelledby': 'teams-h'},
    el('h3', {id: 'teams-h'}, flavor ? 'Teams on ' + flavor : 'Teams'),
    flavor ? el('p', {class: 'muted'}, 'Pods and workloads on ' + flavor +
      '; the preempted columns count each team\'s pods on every instance type.') : null,
    el('div', {class: 'scroll'}, el('table', {class: 'teams'},
      el('thead', {}, el('tr', {},
        ['Team', 'Running pods', 'Pending pods', 'Pending workloads', 'Average wait', 'Preempted now',
          'Preempted (total)'].map(h => el('th', {scope: 'col'}, h)))),
      el('tbody', {}, teams.map(row)))),
    el('p', {class: 'muted'}, 'Each pod is counted in one state: running (bound, not being deleted), ' +
      'pending (waiting for admission), preempted now (evicted, not gone yet: it holds its quota until ' +
      'it is). The Tasks list and taskgov_pods count the same way.'));
}

// Per team, over the last hour (the API's window): its pods bound and how long they had waited,
// its pods that ended — how, and how long they had run.
function windowSection(teams) {
  const minutes = Math.round((teams.find(t => t.window) || {window: {seconds: 3600}}).window.seconds / 60);
  const span = minutes % 60 === 0 ? (minutes === 60 ? 'hour' : minutes / 60 + ' hours') : minutes + ' minutes';
  const avg = s => s === null ? '–' : duration(Math.round(s));
  return el('section', {'aria-labelledby': 'window-h'},
    el('h3', {id: 'window-h'}, 'The last ' + span),
    el('div', {class: 'scroll'}, el('table', {class: 'window'},
      el('thead', {}, el('tr', {}, ['Team', 'Pods started', 'Average wait', 'Pods ended', 'Succeeded',
        'Failed', 'Preempted', 'Deleted', 'Average run'].map(h => el('th', {scope: 'col'}, h)))),
      el('tbody', {}, teams.filter(t => t.window).map(t => el('tr', {'data-team': t.name},
        el('th', {scope: 'row'}, t.name),
        el('td', {class: 'num'}, t.window.boundPods),
        el('td', {class: 'num'}, avg(t.window.averageWaitSeconds)),
        el('td', {class: 'num'}, t.window.endedPods),
        ['Succeeded', 'Failed', 'Preempted', 'Deleted'].map(o => el('td', {class: 'num'}, t.window.ended[o])),
        el('td', {class: 'num'}, avg(t.window.averageRunSeconds))))))),
    el('p', {class: 'muted'}, 'Waits run from a pod\'s creation to its start, run times from its start to ' +
      'its end, as taskgov_pod_wait_seconds and taskgov_pod_run_seconds count them. The tasks that ended ' +
      'are listed on the Tasks page.'));
}

// The last 24 h of `resource`: the cluster's capacity and use, and each team's use.
function trend(history, resource) {
  const lines = [];
  const capacity = {}, inUse = {};
  for (const s of history.cluster) {
    for (const [t, used, alloc] of s.points) {
      inUse[t] = (inUse[t] || 0) + (used || 0);
      capacity[t] = (capacity[t] || 0) + (alloc || 0);
    }
  }
  const times = Object.keys(capacity).sort();
  if (times.length) {
    lines.push({name: 'capacity', cls: 'capacity', points: times.map(t => [Date.parse(t), capacity[t]])});
    lines.push({name: 'in use', cls: 'inuse', points: times.map(t => [Date.parse(t), inUse[t]])});
  }
  const perTeam = {};
  for (const s of history.teams) {
    const p = perTeam[s.team] = perTeam[s.team] || {};
    for (const [t, usage] of s.points) p[t] = (p[t] || 0) + (usage || 0);
  }
  Object.entries(perTeam).forEach(([team, p], i) => lines.push({
    name: team, cls: 'team c' + (i % 6),
    points: Object.keys(p).sort().map(t => [Date.parse(t), p[t]])}));
  const section = el('section', {'aria-labelledby': 'trend-h'}, el('h3', {id: 'trend-h'}, 'Trend: ' + resource));
  const all = lines.flatMap(l => l.points);
  if (all.length < 2) {
    section.append(el('p', {class: 'muted'}, 'Not enough samples yet: the extender samples every 30 s.'));
    return section;
  }
  const W = 760, H = 200, pad = 36;
  const t0 = Math.min(...all.map(p => p[0])), t1 = Math.max(...all.map(p => p[0]));
  const vmax = Math.max(1, ...all.map(p => p[1]));
  const x = t => pad + (W - 2 * pad) * (t1 > t0 ? (t - t0) / (t1 - t0) : 1);
  const y = v => H - pad / 2 - (H - pad) * v / vmax;
  const chart = svg('svg', {class: 'trend', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img',
    'aria-label': resource + ' over time: ' + lines.map(l => l.name + ' ' + Math.round(l.points[l.points.length - 1][1])).join(', ')},
    svg('line', {class: 'axis', x1: pad, y1: y(0), x2: W - pad, y2: y(0)}),
    svg('text', {class: 'tick', x: 2, y: y(vmax) + 4}, String(Math.round(vmax))),
    svg('text', {class: 'tick', x: 2, y: y(0) + 4}, '0'),
    svg('text', {class: 'tick', x: pad, y: H - 2}, new Date(t0).toLocaleTimeString()),
    svg('text', {class: 'tick', x: W - pad - 60, y: H - 2}, new Date(t1).toLocaleTimeString()),
    ...lines.map(l => svg('polyline', {class: 'series ' + l.cls, 'data-series': l.name,
      points: l.points.map(([t, v]) => x(t).toFixed(1) + ',' + y(v).toFixed(1)).join(' ')})));
  section.append(chart, el('p', {class: 'legend'}, lines.map(l => el('span', {class: 'key line ' + l.cls}, l.name))));
  return section;
}

// "Reclaim 4, InTeamPriority 1": what a team's preemptions were for.
function preemptionReasons(p) {
  return Object.entries(p.byReason).map(([reason, n]) => reason + ' ' + n).join(', ') || 'none';
}

function shareText(share) {
  if (share === undefined) return '';
  return share === '+Inf' ? 'inf' : share.toFixed(3);
}

function legend(kind, text) {
  return el('span', {class: 'key ' + kind}, text);
}

function meter(used, total) {
  const width = 160;
  const w = total > 0 ? Math.min(width, width * used / total) : 0;
  return svg('svg', {class: 'meter', width, height: 12, viewBox: '0 0 ' + width + ' 12', preserveAspectRatio: 'none',
    role: 'img', 'aria-label': percent(used, total) + ' in use'},
    svg('rect', {class: 'track', x: 0, y: 0, width, height: 12, rx: 3}),
    svg('rect', {class: 'used', x: 0, y: 0, width: w, height: 12, rx: 3}));
}

// Allocated (outline), used within it, borrowed beyond it, lent (hatched) out of the idle part.
function allocationBar(q) {
  const nominal = quantity(q.nominal), used = quantity(q.usage);
  const borrowed = quantity(q.borrowed), lent = quantity(q.lent);
  const scale = Math.max(nominal, used, 1);
  const W = 200, H = 14;
  const x = v => W * v / scale;
  const own = Math.min(used, nominal);
  return svg('svg', {class: 'bar', width: W, height: H, role: 'img',
    'aria-label': q.usage + ' used of ' + q.nominal + ' allocated, ' + q.borrowed + ' borrowed, ' + q.lent + ' lent'},
    svg('rect', {class: 'nominal', x: 0.5, y: 0.5, width: Math.max(0, x(nominal) - 1), height: H - 1}),
    svg('rect', {class: 'used', x: 0, y: 2, width: x(own), height: H - 4}),
    svg('rect', {class: 'borrowed', x: x(nominal), y: 2, width: x(borrowed), height: H - 4}),
    svg('rect', {class: 'lent', x: x(nominal) - x(lent), y: 2, width: x(lent), height: H - 4}));
}

function select(label, param, value, options) {
  const id = 'f-' + param;
  return el('span', {class: 'filter'},
    el('label', {for: id}, label),
    el('select', {id, onchange: e => setParam(param, e.target.value)},
      el('option', {value: ''}, 'All'),
      options.map(o => el('option', {value: o, selected: o === value}, o))));
}

// ---- Tasks ----

// Who suspended a workload's job and why (issue 35): "Reclaimed by taskgov", "by its user".
function suspendedBy(s) {
  if (s.by !== 'taskgov') return 'by its user';
  const how = {Reclaim: 'Reclaimed', InTeamPriority: 'Preempted', Priority: 'Preempted',
    FairShare: 'FairShare'}[s.reason] || 'Paused';
  return how + ' by taskgov';
}
function stateText(w) {
  return w.suspended ? w.state + ' (' + suspendedBy(w.suspended) + ')' : w.state;
}

const COLUMNS = [
  {key: 'name', title: 'Workload', value: w => w.namespace + '/' + w.name},
  {key: 'team', title: 'Team', value: w => w.team},
  {key: 'kind', title: 'Kind', value: w => w.kind},
  {key: 'state', title: 'State', value: w => w.state},
  {key: 'priority', title: 'Priority', value: w => w.priority},
  {key: 'pods', title: 'Pods', value: w => w.pods},
  {key: 'request', title: 'Request', value: w => requestText(w.request)},
  {key: 'wait', title: 'Waited', value: w => w.waitSeconds},
  {key: 'queue', title: 'Queue', value: w => w.queuePosition ?? Infinity},
];

async function renderTasks(r) {
  if (r.rest.length === 2) return renderTask(r.rest[0], r.rest[1]);
  const team = r.params.get('team') || '';
  const phase = r.params.get('state') || '';
  const text = (r.params.get('q') || '').toLowerCase();
  const query = new URLSearchParams({limit: '1000'});
  if (team) query.set('team', team);
  if (phase) query.set('state', phase);
  const ended = new URLSearchParams({limit: '100'});
  if (team) ended.set('team', team);
  const [list, teams, history] = await Promise.all([api('/api/v1/workloads?' + query),
    api('/api/v1/teams'), api('/api/v1/history/tasks?' + ended).catch(e => {
      if (e instanceof Unauthorized || e instanceof Unreachable) throw e;
      return null;  // an extender without a task history
    })]);
  let items = list.items.filter(w => !text || (w.namespace + '/' + w.name).toLowerCase().includes(text));
  const col = COLUMNS.find(c => c.key === state.sort.key) || COLUMNS[0];
  items = items.slice().sort((a, b) => {
    const x = col.value(a), y = col.value(b);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return state.sort.up ? c : -c;
  });
  const search = el('input', {id: 'f-q', type: 'search', value: r.params.get('q') || '',
    placeholder: 'namespace/name', onchange: e => setParam('q', e.target.value)});
  return [
    el('h2', {}, 'Tasks'),
    el('div', {class: 'filters', role: 'group', 'aria-label': 'Filters'},
      select('Team', 'team', team, teams.items.map(t => t.name)),
      select('State', 'state', phase, ['Pending', 'Admitted', 'Running', 'Terminating', 'Suspended']),
      el('span', {class: 'filter'}, el('label', {for: 'f-q'}, 'Name'), search)),
    team && !teams.items.some(t => t.name === team) ? unknownTeam(team, teams) : null,
    el('p', {class: 'muted', id: 'task-count'}, items.length + ' of ' + list.total + ' workloads' +
      (list.continue ? ' (the first 1000)' : '')),
    el('table', {class: 'tasks'},
      el('thead', {}, el('tr', {}, COLUMNS.map(c => el('th', {scope: 'col',
        'aria-sort': c.key === state.sort.key ? (state.sort.up ? 'ascending' : 'descending') : 'none'},
        el('button', {type: 'button', class: 'sort', onclick: () => {
          state.sort = {key: c.key, up: state.sort.key === c.key ? !state.sort.up : true};
          render();
        }}, c.title))), el('th', {scope: 'col'}, 'Why it waits'))),
      el('tbody', {}, items.map(w => el('tr', {'data-state': w.state, 'data-team': w.team,
        'data-name': w.hidden ? null : w.namespace + '/' + w.name},
        el('th', {scope: 'row'}, w.hidden ? el('span', {class: 'muted'}, '(another team\'s)') :
          el('a', {href: '#/tasks/' + encodeURIComponent(w.namespace) + '/' + encodeURIComponent(w.name)},
            w.namespace + '/' + w.name)),
        el('td', {}, w.team),
        el('td', {}, w.kind),
        el('td', {}, el('span', {class: 'state ' + w.state.toLowerCase()}, stateText(w))),
        el('td', {}, w.priorityClass || String(w.priority)),
        el('td', {class: 'num'}, w.declaredPods > w.pods ? w.pods + ' of ' + w.declaredPods : w.pods),
        el('td', {}, requestText(w.request)),
        el('td', {class: 'num'}, duration(w.waitSeconds)),
        el('td', {class: 'num'}, w.queuePosition ?? ''),
        el('td', {class: 'why'}, w.why))))),
    history ? endedSection(history) : null,
  ];
}

// The tasks that ended — succeeded, failed, preempted (with the reason), deleted — newest first.
function endedSection(history) {
  return el('section', {'aria-labelledby': 'ended-h'},
    el('h3', {id: 'ended-h'}, 'Ended in the last 24 hours'),
    history.items.length === 0 ? el('p', {class: 'muted'}, 'None.') :
      el('div', {class: 'scroll'}, el('table', {class: 'ended'},
        el('thead', {}, el('tr', {}, ['Workload', 'Team', 'Kind', 'Outcome', 'Pods', 'Started', 'Ended',
          'Ran'].map(h => el('th', {scope: 'col'}, h)))),
        el('tbody', {}, history.items.map(x => el('tr', {'data-outcome': x.outcome, 'data-team': x.team},
          el('th', {scope: 'row'}, x.hidden ? el('span', {class: 'muted'}, '(another team\'s)') :
            x.namespace + '/' + x.name),
          el('td', {}, x.team),
          el('td', {}, x.kind),
          el('td', {}, x.outcome + (x.reason ? ' (' + x.reason + ')' : '')),
          el('td', {class: 'num'}, x.pods),
          el('td', {}, x.startedAt || '–'),
          el('td', {}, x.endedAt),
          el('td', {class: 'num'}, duration(x.runSeconds))))))));
}

async function renderTask(ns, name) {
  const path = '/api/v1/workloads/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name);
  const reply = await api(path);
  const waits = reply.items.some(w => w.state === 'Pending' || w.state === 'Suspended');
  const why = waits ? await api(path + '/explanation') : null;
  const out = [el('p', {}, el('a', {href: '#/tasks'}, '← All tasks'))];
  for (const w of reply.items) {
    out.push(el('article', {class: 'task', 'aria-labelledby': 'task-h'},
      el('h2', {id: 'task-h'}, w.namespace + '/' + w.name),
      el('dl', {class: 'facts'},
        fact('Kind', w.kind), fact('Team', w.team), fact('State', stateText(w)),
        w.suspended ? fact('Suspended by', w.suspended.by === 'taskgov' ?
          'taskgov (' + (w.suspended.reason || 'no reason recorded') +
          (w.suspended.since ? ', since ' + w.suspended.since : '') + '; ' + w.suspended.suspensions +
          (w.suspended.suspensions === 1 ? ' time' : ' times') + '): resumed when its whole demand fits' :
          'its user: taskgov never resumes it') : null,
        fact('Priority', w.priorityClass ? w.priorityClass + ' (' + w.priority + ')' : String(w.priority)),
        fact('Pods', w.declaredPods > w.pods ? w.pods + ' of ' + w.declaredPods + ' created' : String(w.pods)),
        fact('Request', requestText(w.request)),
        fact('Nodes', w.nodes.join(', ') || '–'),
        fact('Created', w.createdAt || '–'), fact('Started', w.startedAt || '–'),
        fact('Waited', duration(w.waitSeconds)), fact('Running for', duration(w.runSeconds)),
        fact('Queue position', w.queuePosition ?? '–'),
        w.topology ? fact('Topology', w.topology.level.replace(/^.*\//, '') + ' domain ' +
          w.topology.domain + (w.topology.required ? ' (required)' : ' (preferred)')) : null),
      el('section', {class: 'explanation', 'aria-labelledby': 'why-h'},
        el('h3', {id: 'why-h'}, 'Why'),
        el('p', {id: 'why'}, w.state === 'Running' ? 'Running.' :
          (w.state === 'Pending' || w.state === 'Suspended') && why ? why.summary :
          w.state === 'Suspended' ? w.why :
          (w.refusal ? w.refusal : 'Not refused yet: waiting for the scheduler to try it.')),
        (w.state === 'Pending' || w.state === 'Suspended') && why ? explanationTables(why) : null,
        w.refusal ? el('p', {class: 'muted', id: 'last-refusal'}, 'The filter\'s last refusal' +
          (w.refusedSince ? ' (since ' + w.refusedSince + ')' : '') + ': ' + w.refusal) : null,
        w.preemption ? el('p', {id: 'preemption'}, 'In progress: ' + w.preemption) : null),
      el('h3', {}, 'Pods'),
      el('table', {class: 'pods'},
        el('thead', {}, el('tr', {}, ['Pod', 'State', 'Request', 'Created', 'Started', 'Refusal']
          .map(h => el('th', {scope: 'col'}, h)))),
        el('tbody', {}, w.podList.map(p => el('tr', {},
          el('th', {scope: 'row'}, p.name), el('td', {}, p.state), el('td', {}, requestText(p.request)),
          el('td', {}, p.createdAt || ''), el('td', {}, p.startedAt || ''), el('td', {class: 'why'}, p.refusal)))))));
  }
  return out;
}

// The explanation's rules, one table per flavor and mode, in the filter's order.
function explanationTables(x) {
  const row = c => el('tr', {class: c.passed ? 'pass' : 'fail'},
    el('td', {'aria-label': c.passed ? 'passes' : 'refuses'}, c.passed ? '✓' : '✗'),
    el('th', {scope: 'row'}, c.rule), el('td', {}, c.detail), el('td', {}, c.change || ''));
  const table = (caption, checks) => el('table', {class: 'rules'},
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, ['', 'Rule', 'Found', 'To pass'].map(h => el('th', {scope: 'col'}, h)))),
    el('tbody', {}, checks.map(row)));
  return el('div', {class: 'rules', id: 'rules'},
    x.checks.length ? table('The task (' + x.outlook + ')', x.checks) : null,
    x.flavors.map(f => table(f.flavor + ', ' + (f.mode === 'Borrowing' ? 'borrowing' : 'within nominal quota') +
      (f.admissible ? ': admissible' : ''), f.checks)));
}

function fact(term, value) {
  return [el('dt', {}, term), el('dd', {}, value)];
}

// ---- Policies ----

// HyperPod IdleResourceSharing: off, or the cohort it lends within and the accelerators it lends
// now (vCPU and memory are in the admin API).
function idleSharing(sharing) {
  if (!sharing || !sharing.enabled) return 'Disabled';
  if (!sharing.cohort) return 'Enabled, but no cohort to lend within';
  const lent = sharing.unallocated.filter(u => u.resource !== 'cpu' && u.resource !== 'memory')
    .map(u => u.amount + ' ' + u.resource + ' on ' + u.flavor);
  return 'Enabled: capacity no quota covers is lent within cohort ' + sharing.cohort +
    (lent.length ? ' (now ' + lent.join(', ') + ')' : ' (no accelerator unallocated now)');
}

async function renderPolicies() {
  const [policy, teams, cluster] = await Promise.all([
    api('/api/v1/policy'), api('/api/v1/teams'), api('/api/v1/cluster')]);
  const inCluster = new Set(cluster.flavors.filter(f => f.nodes > 0).map(f => f.name));
  const reload = policy.reload;
  return [
    el('h2', {}, 'Policies'),
    el('section', {'aria-labelledby': 'cluster-policy-h'},
      el('h3', {id: 'cluster-policy-h'}, 'Cluster policy'),
      el('dl', {class: 'facts'},
        fact('Task prioritization', policy.taskPrioritization),
        fact('Idle compute allocation', policy.idleComputeAllocation),
        fact('Preemption grace period', policy.preemption.gracePeriodSeconds + 's'),
        fact('Minimum runtime before preemption', policy.preemption.minimumRuntimeSeconds + 's'),
        fact('Gang timeout', policy.gangTimeoutSeconds + 's'),
        fact('Starvation bound', policy.starvationBoundSeconds > 0 ?
          policy.starvationBoundSeconds + 's' : 'off'),
        fact('Idle resource sharing', idleSharing(policy.idleResourceSharing)),
        reload ? fact('Last reload', reload.lastSucceeded ? 'succeeded ' + (reload.lastSuccessAt || '') :
          'FAILED: ' + reload.lastError) : null),
      el('table', {class: 'classes'},
        el('caption', {}, 'Priority classes'),
        el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Name'), el('th', {scope: 'col'}, 'Weight'))),
        el('tbody', {}, policy.priorityClasses.length === 0 ?
          el('tr', {}, el('td', {colspan: 2, class: 'muted'}, 'None: pods rank by spec.priority')) :
          policy.priorityClasses.map(c => el('tr', {},
            el('th', {scope: 'row'}, c.name), el('td', {class: 'num'}, c.value)))))),
    cohortSection(policy.cohorts || []),
    el('section', {'aria-labelledby': 'alloc-policy-h'},
      el('h3', {id: 'alloc-policy-h'}, 'Compute allocations'),
      teams.items.map(t => el('article', {class: 'allocation', 'data-team': t.name},
        el('h4', {}, t.name),
        el('p', {class: 'muted'}, [
          t.cohort ? 'cohort ' + t.cohort : 'no cohort (neither lends nor borrows)',
          'fair-share weight ' + t.fairShareWeight,
          t.queueing,
          'within the team: ' + t.preemption.withinTeam,
          'reclaim: ' + t.preemption.reclaimWithinCohort,
          t.active ? null : 'INACTIVE',
          'namespaces ' + (t.namespaces.join(', ') || '–'),
        ].filter(Boolean).join(' · ')),
        el('table', {class: 'quotas'},
          el('thead', {}, el('tr', {}, ['Instance type', 'Resource', 'Nominal', 'Borrowing limit', 'Lending limit']
            .map(h => el('th', {scope: 'col'}, h)))),
          el('tbody', {}, t.quotas.map(q => el('tr', {},
            el('th', {scope: 'row'}, q.flavor, inCluster.has(q.flavor) ? null : el('span', {class: 'muted'}, ' (no nodes yet)')),
            el('td', {}, q.resource),
            el('td', {class: 'num'}, q.nominal),
            el('td', {class: 'num'}, q.borrowingLimit ?? 'unlimited'),
            el('td', {class: 'num'}, q.lendingLimit ?? 'all')))))))),
  ];
}

// Cohorts that hold quota themselves (Kueue Cohort resourceGroups) or have a parent; nothing when
// every cohort is only its teams' name.
function cohortSection(cohorts) {
  const shown = cohorts.filter(c => c.quota.length > 0 || c.parent);
  if (shown.length === 0) return null;
  return el('section', {'aria-labelledby': 'cohort-policy-h'},
    el('h3', {id: 'cohort-policy-h'}, 'Cohorts'),
    el('p', {class: 'muted'}, "A cohort's own quota joins the pool its teams borrow from. " +
      'Quota is pooled within each cohort, not across a parent.'),
    el('table', {class: 'quotas', id: 'cohorts'},
      el('thead', {}, el('tr', {}, ['Cohort', 'Parent', 'Instance type', 'Resource', 'Own quota']
        .map(h => el('th', {scope: 'col'}, h)))),
      el('tbody', {}, shown.flatMap(c => (c.quota.length ? c.quota : [null]).map(q => el('tr', {},
        el('th', {scope: 'row'}, c.name),
        el('td', {}, c.parent || '–'),
        el('td', {}, q ? q.flavor : '–'),
        el('td', {}, q ? q.resource : '–'),
        el('td', {class: 'num'}, q ? q.nominal : 'none')))))));
}

// ---- start ----

function start() {
  // A sign-in link may carry the token in the fragment (#token=...): kept for the session only,
  // and taken out of the address bar.
  const m = /[#&?]token=([^&]+)/.exec(location.hash);
  if (m) {
    state.token = decodeURIComponent(m[1]);
    sessionStorage.setItem(TOKEN_KEY, state.token);
    history.replaceState(null, '', location.pathname + location.hash.replace(/[?&]?token=[^&]+/, '').replace(/^#$/, '#/dashboard'));
  }
  document.getElementById('signout').hidden = !state.token;
  document.getElementById('login-form').addEventListener('submit', () => {
    state.token = document.getElementById('token').value.trim();
    sessionStorage.setItem(TOKEN_KEY, state.token);
    document.getElementById('signout').hidden = !state.token;
    render();
  });
  document.getElementById('signout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = '';
    location.reload();
  });
  const pause = document.getElementById('pause');
  pause.addEventListener('click', () => {
    state.paused = !state.paused;
    pause.setAttribute('aria-pressed', String(state.paused));
    pause.textContent = state.paused ? 'Resume updates' : 'Pause updates';
    schedule();
  });
  window.addEventListener('hashchange', () => { render(); document.getElementById('main').focus(); });
  render().then(schedule);
}

// Script errors are shown and counted where a person (or a browser test) sees them.
function noteScriptError(message) {
  const n = Number(document.body.dataset.scriptErrors || 0) + 1;
  document.body.dataset.scriptErrors = String(n);
  showError('console error: ' + message);
}
window.addEventListener('error', e => noteScriptError(e.message));
window.addEventListener('unhandledrejection', e => noteScriptError(String(e.reason)));

document.addEventListener('DOMContentLoaded', start);
