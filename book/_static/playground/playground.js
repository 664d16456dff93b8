/*
 * The maze playground page: a grid the reader edits (5 x 5 to 30 x 30), one of two agents of
 * agent.js walking it, and the planning agent's value map drawn under the maze.
 * Needs agent.js (MazeAgent) and weights.js (MAZE_PLAYGROUND_WEIGHTS) loaded first, and an
 * element with id "playground-app".
 *
 * The address may set the start: ?agent=propagation&rows=9&cols=24&seed=3&speed=4.
 * With ?selftest=1 it tests itself (a maze drawn by clicks, random mazes of three sizes solved
 * along shortest paths, the agent, size and speed controls, the value map) and writes the
 * outcome to data-selftest and data-selftest-report (for .ci/check_site.py).
 */
(function () {
  'use strict';
  var A = window.MazeAgent;
  var root = document.getElementById('playground-app');
  if (!root || !A || !window.MAZE_PLAYGROUND_WEIGHTS) return;
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
  setup.appendChild(el('span', 'pg-label', 'Agent:'));
  var agentSelect = select('pg-agent-select', [['planning', 'planning (value iteration)'],
                                        ['propagation', 'propagation']], ui.agent, setAgent);
  setup.appendChild(agentSelect);
  var sizes = [];
  for (var n = MIN_SIZE; n <= MAX_SIZE; n++) sizes.push([n, String(n)]);
  setup.appendChild(el('span', 'pg-label', 'Size:'));
  var rowsSelect = select('pg-rows', sizes, s.rows, function (v) { resize(+v, s.cols); });
  var colsSelect = select('pg-cols', sizes, s.cols, function (v) { resize(s.rows, +v); });
  rowsSelect.setAttribute('aria-label', 'rows');
  colsSelect.setAttribute('aria-label', 'columns');
  var sizeBox = el('span', 'pg-size');
  sizeBox.appendChild(rowsSelect);
  sizeBox.appendChild(el('span', 'pg-small pg-unit', 'rows ×'));
  sizeBox.appendChild(colsSelect);
  sizeBox.appendChild(el('span', 'pg-small pg-unit', 'columns'));
  setup.appendChild(sizeBox);
  setup.appendChild(el('span', 'pg-label', 'Speed:'));
  var speedInput = el('input', 'pg-speed');
  speedInput.type = 'range';
  speedInput.min = '0';
  speedInput.max = String(SPEEDS.length - 1);
  speedInput.value = String(ui.speed);
  speedInput.setAttribute('aria-label', 'speed');
  var speedText = el('span', 'pg-small pg-speed-text');
  speedInput.addEventListener('input', function () { setSpeed(+speedInput.value); });
  setup.appendChild(speedInput);
  setup.appendChild(speedText);

  var modes = el('div', 'pg-row');
  modes.appendChild(el('span', 'pg-label', 'Click a cell to:'));
  var modeButtons = {};
  [['wall', 'toggle a wall'], ['start', 'place the start'], ['target', 'place the target']]
    .forEach(function (m) {
      modeButtons[m[0]] = button(m[1], function () { setMode(m[0]); }, 'pg-mode');
      modeButtons[m[0]].setAttribute('data-mode', m[0]);
      modes.appendChild(modeButtons[m[0]]);
    });
  var controls = el('div', 'pg-row');
  var runButton = button('Run', function () { toggleRun(); }, 'pg-run');
  controls.appendChild(button('Step', function () { stop(); advance(); }, 'pg-step'));
  controls.appendChild(runButton);
  controls.appendChild(button('Reset', function () { stop(); restart(); }, 'pg-reset'));
  controls.appendChild(button('Random maze', function () { randomMaze(ui.random); },
                              'pg-random'));
  controls.appendChild(button('Clear walls', function () { clearWalls(); }, 'pg-clear'));
  var mapToggle = el('label', 'pg-small pg-map-toggle');
  var mapBox = el('input');
  mapBox.type = 'checkbox';
  mapBox.checked = true;
  mapBox.addEventListener('change', function () { ui.showMap = mapBox.checked; draw(); });
  mapToggle.appendChild(mapBox);
  mapToggle.appendChild(document.createTextNode(' value map'));
  controls.appendChild(mapToggle);

  var board = el('div', 'pg-board');
  board.setAttribute('role', 'grid');
  var cells = [];
  var side = el('div', 'pg-side');
  side.appendChild(el('div', 'pg-heading', 'Policy in this state'));
  var bars = A.ACTION_NAMES.map(function (name) {
    var row = el('div', 'pg-bar-row'), track = el('div', 'pg-bar-track'), bar = el('div', 'pg-bar');
    var value = el('span', 'pg-bar-value');
    row.appendChild(el('span', 'pg-bar-name', name));
    track.appendChild(bar);
    row.appendChild(track);
    row.appendChild(value);
    side.appendChild(row);
    return {row: row, bar: bar, value: value};
  });
  var valueLine = el('div', 'pg-small');
  side.appendChild(valueLine);
  var mapHeading = el('div', 'pg-heading pg-map-heading', 'Value map');
  var mapScale = el('div', 'pg-map-scale');
  var mapEnds = el('div', 'pg-map-ends');
  mapEnds.appendChild(el('span', null, 'low'));
  mapEnds.appendChild(el('span', null, 'high (target)'));
  var mapLine = el('div', 'pg-small pg-map-line');
  [mapHeading, mapScale, mapEnds, mapLine].forEach(function (e) { side.appendChild(e); });
  side.appendChild(el('div', 'pg-small', 'Green: the agent. Red: the target (ringed red once ' +
                      'the agent stands on it). Black ring: the start. Dots: a shortest path ' +
                      'from the start (breadth-first search). Orange rings: cells the agent ' +
                      'has visited.'));
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
    speedText.textContent = SPEEDS[index] + ' steps/s';
    root.setAttribute('data-delay', Math.round(1000 / SPEEDS[index]));
    if (ui.timer !== null) { stop(); toggleRun(); }
  }
  function tell(text) {
    notice.textContent = text;
    notice.style.display = text ? '' : 'none';
  }
  function onCell(r, c) {
    var i = r * s.cols + c, at = [r, c];
    var here = s.walls[i] ? 'a wall' : same(at, s.start) ? 'the start'
      : same(at, s.target) ? 'the target' : '';
    tell('');
    if (ui.mode === 'wall') {
      if (same(at, s.start) || same(at, s.target)) {
        tell('This cell holds ' + here + ', which cannot become a wall: move ' + here +
             ' first ("place the ' + here.slice(4) + '").');
        return;
      }
      stop();
      s.walls[i] = !s.walls[i];
      mazeChanged();
    } else if (here) {
      if (here !== 'the ' + ui.mode) {
        tell('The ' + ui.mode + ' cannot go on ' + here + ': click a free cell' +
             (s.walls[i] ? ', or clear this wall first with "toggle a wall".' : '.'));
      }
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
    runButton.textContent = 'Run';
  }
  function toggleRun() {
    if (ui.timer !== null) { stop(); return; }
    if (s.done) restart();
    runButton.textContent = 'Pause';
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
      mapLine.textContent = 'The propagation agent has no value map: its 8 features per ' +
        'cell are learned, not values.';
    } else if (!ui.showMap) {
      mapLine.textContent = '';
    } else if (frame !== null) {
      mapLine.textContent = 'After ' + frame.state.backups + ' of ' + frame.total +
        ' backups: the mean of the ' + frame.state.width + ' value channels. ' +
        (frame.state.settled ? 'Settled: a free cell left uncoloured has no way to the ' +
         'target.' : 'Uncoloured cells have no value yet.');
    }
  }

  // --- drawing -----------------------------------------------------------------------------
  function draw() {
    var shortest = A.shortestPath(maze(), s.start, s.target), onPath = {}, seen = {};
    (shortest || []).forEach(function (p) { onPath[p[0] * s.cols + p[1]] = true; });
    s.trail.forEach(function (p) { seen[p[0] * s.cols + p[1]] = true; });
    cells.forEach(function (cell, i) {
      var at = [Math.floor(i / s.cols), i % s.cols], cls = 'pg-cell', label = 'free';
      if (s.walls[i]) { cls += ' pg-wall'; label = 'wall'; }
      if (seen[i]) cls += ' pg-visited';
      if (same(at, s.start)) cls += ' pg-start';
      if (onPath[i]) cls += ' pg-path';
      if (same(at, s.target)) { cls += ' pg-target'; label = 'target'; }
      if (same(at, s.agent)) { cls += ' pg-agent'; label = 'agent'; }
      cell.className = cls;
      cell.setAttribute('aria-label', 'row ' + at[0] + ', column ' + at[1] + ': ' + label);
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
    valueLine.textContent = p ? 'Value estimate V(s): ' + p.value.toFixed(3) + ', the ' +
      "critic's learned guess of the return, which is at most 1 (the reward at the target)" +
      (p.value > 1 ? ': an estimate, not a bound, ' + (p.value - 1).toFixed(3) + ' too high ' +
       'here. ' : '. ') + 'The agent takes the most probable move (greedy).' : '';
    var limit = s.rows * s.cols, best = shortest ? shortest.length - 1 : null, text;
    if (s.done === 'target' || same(s.agent, s.target)) {
      text = 'Reached the target in ' + s.steps + ' steps (shortest path: ' + best + ').';
    } else if (s.done === 'time limit') {
      text = 'Time limit: ' + limit + ' steps without reaching the target (' +
        (best === null ? 'no path from the start' : 'shortest path: ' + best + ' steps') + ').';
    } else if (s.done === 'no legal move' || stuck) {
      text = 'The agent has no legal move: every neighbour is a wall or off the grid.';
    } else if (best === null) {
      text = 'No path: walls separate the start from the target. The agent will walk until ' +
        'the time limit of ' + limit + ' steps.';
    } else {
      text = 'Step ' + s.steps + ' of at most ' + limit + '. Shortest path from the start: ' +
        best + ' steps.';
    }
    status.textContent = text;
    root.setAttribute('data-outcome', s.done || 'running');
    root.setAttribute('data-steps', s.steps);
    root.setAttribute('data-shortest', best === null ? -1 : best);
  }

  // --- the first maze, and the self-test ---------------------------------------------------
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

  if (selftest) runSelfTest();

  function runSelfTest() {
    var report = {}, failures = [];
    function check(ok, message) { if (!ok) failures.push(message); }
    function change(e, value) {
      e.value = String(value);
      e.dispatchEvent(new Event(e.tagName === 'INPUT' ? 'input' : 'change'));
    }
    function finish() {
      root.setAttribute('data-selftest-report', JSON.stringify(report));
      root.setAttribute('data-selftest', failures.length ? 'failed: ' + failures.join('; ')
                                                         : 'passed');
    }
    function stepToEnd() {
      var guard = s.rows * s.cols + 1;
      while (guard-- > 0 && advance()) { /* the Step button's action, without the timer */ }
    }
    // 1. Random mazes of three sizes: the planning agent walks a shortest path every time.
    ui.random = A.seededRandom(2026);
    setAgent('planning');
    [[10, 10], [20, 20], [9, 24]].forEach(function (size) {
      change(rowsSelect, size[0]);
      change(colsSelect, size[1]);
      check(cells.length === size[0] * size[1], 'the board has ' + cells.length + ' cells at ' +
            size.join('x'));
      var solved = 0;
      for (var k = 0; k < 100; k++) {
        if (k > 0) root.querySelector('.pg-random').click();
        var best = +root.getAttribute('data-shortest');
        stepToEnd();
        if (s.done === 'target' && s.steps === best) solved += 1;
      }
      report[size.join('x')] = solved + '/100';
      check(solved === 100, size.join('x') + ': ' + solved + ' of 100 along a shortest path');
    });
    // 2. The value map: one coloured cell (the target) before the backups, every free cell
    //    once they settle, and nothing for the propagation agent.
    change(rowsSelect, 10);
    change(colsSelect, 10);
    check(+root.getAttribute('data-coloured') === 1 && +root.getAttribute('data-backup') === 0,
          'the value map before any backup colours ' + root.getAttribute('data-coloured') +
          ' cells');
    var freeCells = s.walls.filter(function (w) { return !w; }).length;
    var waited = 0, poll = setInterval(function () {
      waited += 1;
      if (ui.anim !== null && waited < 200) return;
      clearInterval(poll);
      report.valueMap = root.getAttribute('data-coloured') + '/' + freeCells;
      report.backups = root.getAttribute('data-backups');
      check(+root.getAttribute('data-coloured') === freeCells, 'the settled value map colours ' +
            report.valueMap + ' free cells');
      check(+root.getAttribute('data-backup') === +root.getAttribute('data-backups') &&
            +report.backups > 5, 'the backups stopped at ' + root.getAttribute('data-backup'));
      change(agentSelect, 'propagation');
      check(+root.getAttribute('data-coloured') === 0 && root.getAttribute('data-agent') ===
            'propagation', 'the propagation agent shows a value map');
      change(agentSelect, 'planning');
      drawnMaze();
    }, 50);
    // 3. A maze drawn by clicks ('#' wall, S start, T target), run by each agent in turn at two
    //    speeds: both reach the target, and a step takes the speed's time.
    function drawnMaze() {
      var layout = ['.#.#...#..', '.#.#.#.#.#', '.....#....', '.#.#####.#', '.#.#...#S.',
                    '.#.#.#.#.#', '.#..T#.#..', '.#.#######', '.#........', '.#.#.#.#.#'];
      var click = function (r, c) { cells[r * s.cols + c].click(); };
      root.querySelector('.pg-clear').click();
      layout.forEach(function (row, r) {
        var c = row.indexOf('S');
        if (c >= 0) { modeButtons.start.click(); click(r, c); }
      });
      layout.forEach(function (row, r) {
        var c = row.indexOf('T');
        if (c >= 0) { modeButtons.target.click(); click(r, c); }
      });
      modeButtons.wall.click();
      layout.forEach(function (row, r) {
        row.split('').forEach(function (ch, c) { if (ch === '#') click(r, c); });
      });
      // A start placed on a wall stays where it was, and the page says why; the notice goes
      // with the next mode. The value line says what bounds the return.
      var startBefore = s.start.slice();
      modeButtons.start.click();
      click(0, 1);
      report.wallNotice = notice.textContent;
      check(same(s.start, startBefore) && /cannot go on a wall/.test(notice.textContent),
            'the start placed on a wall: "' + notice.textContent + '"');
      modeButtons.wall.click();
      check(notice.textContent === '', 'the notice stayed after the mode changed');
      check(/at most 1/.test(valueLine.textContent), 'the value line: ' + valueLine.textContent);
      var runs = [['planning', SPEEDS.length - 1], ['propagation', 2]];
      report.runs = [];
      (function next() {
        if (!runs.length) { finish(); return; }
        var run = runs.shift();
        change(agentSelect, run[0]);
        change(speedInput, run[1]);
        var t0 = Date.now();
        runButton.click();
        var poll2 = setInterval(function () {
          if (ui.timer !== null && Date.now() - t0 < 60000) return;
          clearInterval(poll2);
          var perStep = (Date.now() - t0) / Math.max(1, s.steps), delay = 1000 / SPEEDS[run[1]];
          report.runs.push({agent: run[0], outcome: s.done, steps: s.steps,
                            msPerStep: Math.round(perStep)});
          check(s.done === 'target', run[0] + ' on the drawn maze: ' + status.textContent);
          check(perStep >= 0.8 * delay && perStep <= 1.5 * delay + 20, run[0] + ' took ' +
                Math.round(perStep) + ' ms a step at ' + SPEEDS[run[1]] + ' steps/s');
          next();
        }, 20);
      })();
    }
  }
})();
