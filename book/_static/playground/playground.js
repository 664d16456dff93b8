/*
 * The maze playground page: a grid the reader edits (5 x 5 to 30 x 30), one of two agents of
 * agent.js walking it, and the planning agent's value map drawn under the maze.
 * Needs agent.js (MazeAgent), weights.js (MAZE_PLAYGROUND_WEIGHTS) and strings.js
 * (mazePlaygroundWords: its words, in the page's language) loaded first, and an element with
 * id "playground-app".
 *
 * The address may set the start: ?agent=propagation&rows=9&cols=24&seed=3&speed=4.
 * With ?selftest=1 selftest.js (loaded first too) tests the page and writes the outcome to
 * data-selftest and data-selftest-report (for .ci/check_site.py).
 */
(function () {
  'use strict';
  var A = window.MazeAgent;
  var root = document.getElementById('playground-app');
  if (!root || !A || !window.MAZE_PLAYGROUND_WEIGHTS || !window.mazePlaygroundWords) return;
  var t = window.mazePlaygroundWords(document.documentElement.lang);  // t('run'): Run, 実行
  var MIN_SIZE = 5, MAX_SIZE = 30;
  // Steps per second of Run, slowest to fastest; the slider picks one.
  var SPEEDS = [2, 4, 8, 16, 32, 64];
  var nets = {};
  A.AGENTS.forEach(function (name) { nets[name] = A.loadWeights(window.MAZE_PLAYGROUND_WEIGHTS, name); });
  var params = {};
  window.location.search.replace(/^\?/, '').split('&').forEach(function (kv) {
    var p = kv.split('=');
    if (p[0]) params[decodeURIComponent(p[0])] = decodeURIComponent(p[1] || '');
  });
  var selftest = params.selftest === '1';
  function sizeParam(name) {
    var n = parseInt(params[name], 10);
    return n >= MIN_SIZE && n <= MAX_SIZE ? n : 10;
  }
  var speedParam = parseInt(params.speed, 10);
  var ui = {
    mode: 'wall', timer: null, anim: null, frame: null, showMap: true,
    agent: A.AGENTS.indexOf(params.agent) >= 0 ? params.agent : 'planning',
    speed: speedParam >= 0 && speedParam < SPEEDS.length ? speedParam : 3,
    random: params.seed ? A.seededRandom(parseInt(params.seed, 10) || 0) : Math.random
  };
  var s = {rows: sizeParam('rows'), cols: sizeParam('cols'), walls: [], start: [0, 0],
           target: [0, 1], agent: [0, 0], steps: 0, done: '', trail: []};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function button(label, onClick, cls) {
    var b = el('button', 'pg-button' + (cls ? ' ' + cls : ''), label);
    b.type = 'button';
    b.addEventListener('click', onClick);
    return b;
  }
  function select(cls, options, value, onChange) {
    var e = el('select', 'pg-select ' + cls);
    options.forEach(function (o) {
      var opt = el('option', null, o[1]);
      opt.value = String(o[0]);
      e.appendChild(opt);
    });
    e.value = String(value);
    e.addEventListener('change', function () { onChange(e.value); });
    return e;
  }
  function same(a, b) { return a[0] === b[0] && a[1] === b[1]; }
  function maze() {
    return {rows: s.rows, cols: s.cols, walls: s.walls, agent: s.agent, target: s.target};
  }
  function net() { return nets[ui.agent]; }
  var policyMemo = {key: null, value: null};
  /** The agent's policy in the current state, computed once per state (Step then draws it). */
  function currentPolicy() {
    var key = ui.agent + ':' + s.rows + 'x' + s.cols + ':' + s.agent + ':' + s.target + ':' +
      s.walls.map(function (w) { return w ? 1 : 0; }).join('');
    if (policyMemo.key !== key) policyMemo = {key: key, value: A.policy(net(), maze())};
    return policyMemo.value;
  }

  // --- layout ------------------------------------------------------------------------------
  root.textContent = '';
  var setup = el('div', 'pg-row');
  setup.appendChild(el('span', 'pg-label', t('agentLabel')));
  var agentSelect = select('pg-agent-select', [['planning', t('agentPlanning')],
                           ['propagation', t('agentPropagation')]], ui.agent, setAgent);
  setup.appendChild(agentSelect);
  var sizes = [];
  for (var n = MIN_SIZE; n <= MAX_SIZE; n++) sizes.push([n, String(n)]);
  setup.appendChild(el('span', 'pg-label', t('sizeLabel')));
  var rowsSelect = select('pg-rows', sizes, s.rows, function (v) { resize(+v, s.cols); });
  var colsSelect = select('pg-cols', sizes, s.cols, function (v) { resize(s.rows, +v); });
  rowsSelect.setAttribute('aria-label', t('rowsAria'));
  colsSelect.setAttribute('aria-label', t('colsAria'));
  var sizeBox = el('span', 'pg-size');
  sizeBox.appendChild(rowsSelect);
  sizeBox.appendChild(el('span', 'pg-small pg-unit', t('rowsUnit')));
  sizeBox.appendChild(colsSelect);
  sizeBox.appendChild(el('span', 'pg-small pg-unit', t('colsUnit')));
  setup.appendChild(sizeBox);
  setup.appendChild(el('span', 'pg-label', t('speedLabel')));
  var speedInput = el('input', 'pg-speed');
  speedInput.type = 'range';
  speedInput.min = '0';
  speedInput.max = String(SPEEDS.length - 1);
  speedInput.value = String(ui.speed);
  speedInput.setAttribute('aria-label', t('speedAria'));
  var speedText = el('span', 'pg-small pg-speed-text');
  speedInput.addEventListener('input', function () { setSpeed(+speedInput.value); });
  setup.appendChild(speedInput);
  setup.appendChild(speedText);

  var modes = el('div', 'pg-row');
  modes.appendChild(el('span', 'pg-label', t('clickLabel')));
  var modeButtons = {};
  [['wall', t('modeWall')], ['start', t('modeStart')], ['target', t('modeTarget')]]
    .forEach(function (m) {
      modeButtons[m[0]] = button(m[1], function () { setMode(m[0]); }, 'pg-mode');
      modeButtons[m[0]].setAttribute('data-mode', m[0]);
      modes.appendChild(modeButtons[m[0]]);
    });
  var controls = el('div', 'pg-row');
  var runButton = button(t('run'), function () { toggleRun(); }, 'pg-run');
  controls.appendChild(button(t('step'), function () { stop(); advance(); }, 'pg-step'));
  controls.appendChild(runButton);
  controls.appendChild(button(t('reset'), function () { stop(); restart(); }, 'pg-reset'));
  controls.appendChild(button(t('randomMaze'), function () { randomMaze(ui.random); },
                              'pg-random'));
  controls.appendChild(button(t('clearWalls'), function () { clearWalls(); }, 'pg-clear'));
  var mapToggle = el('label', 'pg-small pg-map-toggle');
  var mapBox = el('input');
  mapBox.type = 'checkbox';
  mapBox.checked = true;
  mapBox.addEventListener('change', function () { ui.showMap = mapBox.checked; draw(); });
  mapToggle.appendChild(mapBox);
  mapToggle.appendChild(document.createTextNode(' ' + t('valueMapToggle')));
  controls.appendChild(mapToggle);

  var board = el('div', 'pg-board');
  board.setAttribute('role', 'grid');
  var cells = [];
  var side = el('div', 'pg-side');
  side.appendChild(el('div', 'pg-heading', t('policyHeading')));
  var bars = A.ACTION_NAMES.map(function (name) {
    var row = el('div', 'pg-bar-row'), track = el('div', 'pg-bar-track'), bar = el('div', 'pg-bar');
    var value = el('span', 'pg-bar-value');
    var word = 'move' + name[0].toUpperCase() + name.slice(1);  // up: moveUp
    row.appendChild(el('span', 'pg-bar-name', t(word)));
    track.appendChild(bar);
    row.appendChild(track);
    row.appendChild(value);
    side.appendChild(row);
    return {row: row, bar: bar, value: value};
  });
  var valueLine = el('div', 'pg-small');
  side.appendChild(valueLine);
  var mapHeading = el('div', 'pg-heading pg-map-heading', t('valueMapHeading'));
  var mapScale = el('div', 'pg-map-scale');
  var mapEnds = el('div', 'pg-map-ends');
  mapEnds.appendChild(el('span', null, t('mapLow')));
  mapEnds.appendChild(el('span', null, t('mapHigh')));
  var mapLine = el('div', 'pg-small pg-map-line');
  [mapHeading, mapScale, mapEnds, mapLine].forEach(function (e) { side.appendChild(e); });
  side.appendChild(el('div', 'pg-small', t('legend')));
  var status = el('p', 'pg-status');
  status.setAttribute('aria-live', 'polite');
  // Why a click on a cell changed nothing (the start placed on a wall, say).
  var notice = el('p', 'pg-notice');
  notice.setAttribute('aria-live', 'polite');
  var main = el('div', 'pg-main');
  main.appendChild(board);
  main.appendChild(side);
  [setup, modes, controls, notice, main, status].forEach(function (e) { root.appendChild(e); });

  function buildBoard() {
    board.textContent = '';
    cells = [];
    var room = Math.min(520, (root.getBoundingClientRect().width || 536) - 16);  // narrow screens
    var size = Math.max(9, Math.min(34, Math.floor(room / Math.max(s.rows, s.cols))));
    board.style.gridTemplateColumns = 'repeat(' + s.cols + ', ' + size + 'px)';
    board.style.gridTemplateRows = 'repeat(' + s.rows + ', ' + size + 'px)';
    for (var r = 0; r < s.rows; r++) {
      for (var c = 0; c < s.cols; c++) {
        var cell = el('button', 'pg-cell');
        cell.type = 'button';
        cell.setAttribute('data-row', r);
        cell.setAttribute('data-col', c);
        cell.addEventListener('click', onCell.bind(null, r, c));
        board.appendChild(cell);
        cells.push(cell);
      }
    }
    root.setAttribute('data-rows', s.rows);
    root.setAttribute('data-cols', s.cols);
  }

  // --- state changes -----------------------------------------------------------------------
  function setMode(mode) {
    ui.mode = mode;
    tell('');
    Object.keys(modeButtons).forEach(function (k) {
      modeButtons[k].classList.toggle('pg-active', k === mode);
    });
  }
  function setAgent(name) {
    stop();
    ui.agent = name;
    agentSelect.value = name;
    root.setAttribute('data-agent', name);
    mazeChanged();
  }
  function setSpeed(index) {
    ui.speed = index;
    speedInput.value = String(index);
    speedText.textContent = t('speedValue', {speed: SPEEDS[index]});
    root.setAttribute('data-delay', Math.round(1000 / SPEEDS[index]));
    if (ui.timer !== null) { stop(); toggleRun(); }
  }
  function tell(text) {
    notice.textContent = text;
    notice.style.display = text ? '' : 'none';
  }
  // Why a click changed nothing, by mode and by what the cell holds.
  var REFUSED = {wall: {start: 'holdsStart', target: 'holdsTarget'},
                 start: {wall: 'startOnWall', target: 'startOnTarget'},
                 target: {wall: 'targetOnWall', start: 'targetOnStart'}};
  function onCell(r, c) {
    var i = r * s.cols + c, at = [r, c];
    var here = s.walls[i] ? 'wall' : same(at, s.start) ? 'start' : same(at, s.target) ? 'target'
      : '';
    var refused = here && REFUSED[ui.mode][here];
    // The message names the mode button that would make the click work.
    var way = ui.mode !== 'wall' ? 'modeWall' : here === 'start' ? 'modeStart' : 'modeTarget';
    tell(refused ? t(refused, {button: t(way)}) : '');
    if (refused) return;
    if (ui.mode === 'wall') {
      stop();
      s.walls[i] = !s.walls[i];
      mazeChanged();
    } else if (here) {
      // the start or the target is already here: nothing to do
    } else {
      stop();
      if (ui.mode === 'start') {
        s.start = at;
        restart();  // the values do not depend on the start
      } else {
        s.target = at;
        mazeChanged();
      }
    }
  }
  function restart() {
    s.agent = s.start.slice();
    s.steps = 0;
    s.done = '';
    s.trail = [s.agent];
    draw();
  }
  /** The walls or the target changed: restart the episode and show the backups spreading. */
  function mazeChanged() {
    animateBackups();
    restart();
  }
  function clearWalls() {
    stop();
    for (var i = 0; i < s.rows * s.cols; i++) s.walls[i] = false;
    mazeChanged();
  }
  function resize(rows, cols) {
    stop();
    s.rows = rows;
    s.cols = cols;
    rowsSelect.value = String(rows);
    colsSelect.value = String(cols);
    buildBoard();
    randomMaze(ui.random);
  }
  function randomMaze(random) {
    stop();
    s.walls = A.randomWalls(s.rows, s.cols, random);
    var free = [];
    for (var i = 0; i < s.rows * s.cols; i++) {
      if (!s.walls[i]) free.push([Math.floor(i / s.cols), i % s.cols]);
    }
    s.start = free[Math.floor(random() * free.length)];
    do { s.target = free[Math.floor(random() * free.length)]; } while (same(s.target, s.start));
    mazeChanged();
  }
  function advance() {
    if (s.done || same(s.agent, s.target)) return false;
    if (A.actionMask(maze()).indexOf(true) < 0) { s.done = 'no legal move'; draw(); return false; }
    var result = A.step(maze(), currentPolicy().greedy, s.steps);
    s.agent = result.agent;
    s.steps = result.stepCount;
    s.done = result.reason;
    s.trail.push(s.agent);
    draw();
    return !result.done;
  }
  function stop() {
    if (ui.timer !== null) clearInterval(ui.timer);
    ui.timer = null;
    runButton.textContent = t('run');
  }
  function toggleRun() {
    if (ui.timer !== null) { stop(); return; }
    if (s.done) restart();
    runButton.textContent = t('pause');
    ui.timer = setInterval(function () { if (!advance()) stop(); }, 1000 / SPEEDS[ui.speed]);
  }

  // --- the value map -----------------------------------------------------------------------
  // Backups shown one frame at a time, from v_0 (only the target) to the settled values; the
  // agent always acts on the settled values (agent.js computes them at once).
  function animateBackups() {
    if (ui.anim !== null) clearTimeout(ui.anim);
    ui.anim = null;
    ui.frame = null;
    if (net().kind !== 'planning') return;
    var settled = A.planningValues(net(), maze());
    var frame = {state: A.startBackups(net(), maze()), total: settled.backups,
                 top: null, bottom: null};
    var finalMap = A.valueMap(settled);
    finalMap.forEach(function (v) {
      if (v === null) return;
      frame.top = frame.top === null ? v : Math.max(frame.top, v);
      frame.bottom = frame.bottom === null ? v : Math.min(frame.bottom, v);
    });
    ui.frame = frame;
    if (frame.total === 0) A.backup(frame.state);  // nothing to back up: settled at once
    var perTick = Math.max(1, Math.ceil(frame.total / 30));
    root.setAttribute('data-backups', frame.total);
    function tick() {
      for (var i = 0; i < perTick && !frame.state.settled; i++) A.backup(frame.state);
      drawMap();
      ui.anim = frame.state.settled ? null : setTimeout(tick, 60);
    }
    ui.anim = setTimeout(tick, 60);
  }
  // A light-to-dark blue-green scale (low value to high).
  var STOPS = [[255, 255, 217], [199, 233, 180], [127, 205, 187], [65, 182, 196],
               [29, 145, 192], [34, 94, 168]];
  function colour(t) {
    var x = Math.max(0, Math.min(1, t)) * (STOPS.length - 1), i = Math.min(STOPS.length - 2,
      Math.floor(x)), f = x - i, c = [0, 1, 2].map(function (k) {
        return Math.round(STOPS[i][k] + f * (STOPS[i + 1][k] - STOPS[i][k]));
      });
    return 'rgb(' + c.join(', ') + ')';
  }
  mapScale.style.background = 'linear-gradient(to right, ' +
    [0, 0.2, 0.4, 0.6, 0.8, 1].map(colour).join(', ') + ')';
  function drawMap() {
    var frame = ui.frame, show = ui.showMap && frame !== null, coloured = 0;
    var values = show ? A.valueMap(frame.state) : null;
    var span = show ? Math.max(frame.top - frame.bottom, 1e-9) : 1;
    cells.forEach(function (cell, i) {
      var v = values ? values[i] : null;
      if (v === null || s.walls[i]) {
        cell.style.backgroundColor = '';
        cell.removeAttribute('data-value');
      } else {
        cell.style.backgroundColor = colour((v - frame.bottom) / span);
        cell.setAttribute('data-value', v.toFixed(4));
        coloured += 1;
      }
    });
    root.setAttribute('data-coloured', coloured);
    root.setAttribute('data-backup', frame ? frame.state.backups : 0);
    var planning = net().kind === 'planning';
    [mapHeading, mapScale, mapEnds].forEach(function (e) {
      e.style.display = planning && ui.showMap ? '' : 'none';
    });
    mapToggle.style.visibility = planning ? 'visible' : 'hidden';
    if (!planning) {
      mapLine.textContent = t('mapPropagation');
    } else if (!ui.showMap) {
      mapLine.textContent = '';
    } else if (frame !== null) {
      mapLine.textContent = t(frame.state.settled ? 'mapSettled' : 'mapSpreading', {
        done: frame.state.backups, total: frame.total, width: frame.state.width});
    }
  }

  // --- drawing -----------------------------------------------------------------------------
  function draw() {
    var shortest = A.shortestPath(maze(), s.start, s.target), onPath = {}, seen = {};
    (shortest || []).forEach(function (p) { onPath[p[0] * s.cols + p[1]] = true; });
    s.trail.forEach(function (p) { seen[p[0] * s.cols + p[1]] = true; });
    cells.forEach(function (cell, i) {
      var at = [Math.floor(i / s.cols), i % s.cols], cls = 'pg-cell', label = 'cellFree';
      if (s.walls[i]) { cls += ' pg-wall'; label = 'cellWall'; }
      if (seen[i]) cls += ' pg-visited';
      if (same(at, s.start)) cls += ' pg-start';
      if (onPath[i]) cls += ' pg-path';
      if (same(at, s.target)) { cls += ' pg-target'; label = 'cellTarget'; }
      if (same(at, s.agent)) { cls += ' pg-agent'; label = 'cellAgent'; }
      cell.className = cls;
      cell.setAttribute('aria-label', t('cell', {row: at[0], col: at[1], what: t(label)}));
    });
    drawMap();
    var stuck = A.actionMask(maze()).indexOf(true) < 0, p = null;
    if (!same(s.agent, s.target) && !stuck) p = currentPolicy();
    bars.forEach(function (b, a) {
      var prob = p ? p.probs[a] : 0;
      b.bar.style.width = (100 * prob).toFixed(1) + '%';
      b.value.textContent = p ? prob.toFixed(3) : '-';
      b.row.classList.toggle('pg-greedy', p !== null && p.greedy === a);
      b.row.classList.toggle('pg-illegal', p !== null && !p.mask[a]);
    });
    // The return is at most 1 (the reward for reaching the target, discounted): the
    // critic's estimate is learned, not a bound, and may pass it.
    valueLine.textContent = p ? t(p.value > 1 ? 'valueLineOver' : 'valueLine', {
      value: p.value.toFixed(3), bound: t('returnBound'), excess: (p.value - 1).toFixed(3)}) : '';
    var limit = s.rows * s.cols, best = shortest ? shortest.length - 1 : null;
    var numbers = {steps: s.steps, best: best, limit: limit};
    if (s.done === 'target' || same(s.agent, s.target)) {
      status.textContent = t('reached', numbers);
    } else if (s.done === 'time limit') {
      status.textContent = t(best === null ? 'timeLimitNoPath' : 'timeLimit', numbers);
    } else if (s.done === 'no legal move' || stuck) {
      status.textContent = t('noLegalMove');
    } else {
      status.textContent = t(best === null ? 'noPath' : 'progress', numbers);
    }
    root.setAttribute('data-outcome', s.done || 'running');
    root.setAttribute('data-steps', s.steps);
    root.setAttribute('data-shortest', best === null ? -1 : best);
  }

  // --- the first maze, and the self-test (selftest.js) -------------------------------------
  buildBoard();
  setMode('wall');
  setSpeed(ui.speed);
  root.setAttribute('data-agent', ui.agent);
  if (params.seed || s.rows !== 10 || s.cols !== 10) {
    randomMaze(ui.random);
  } else {  // one the propagation agent also solves, (0, 0) to (8, 8)
    s.walls = A.randomWalls(10, 10, A.seededRandom(4));
    s.target = [8, 8];
    mazeChanged();
  }

  if (selftest && !window.MazePlaygroundSelfTest) {
    root.setAttribute('data-selftest', 'failed: selftest.js is not loaded');
  } else if (selftest) {  // the controls it finds in the page
    window.MazePlaygroundSelfTest({A: A, root: root, state: s, ui: ui, t: t, speeds: SPEEDS,
                                   advance: advance, setAgent: setAgent, valueLine: valueLine});
  }
})();
