/*
 * The maze playground page: a 10 x 10 grid the reader edits, the agent of agent.js walking it.
 * Needs agent.js (MazeAgent) and weights.js (MAZE_PLAYGROUND_WEIGHTS) loaded first, and an
 * element with id "playground-app". With "?selftest=1" in the address it draws a maze by
 * clicking, runs the agent and writes the outcome to data-selftest (for .ci/check_site.py).
 */
(function () {
  'use strict';
  var A = window.MazeAgent, ROWS = 10, COLS = 10;
  var root = document.getElementById('playground-app');
  if (!root || !A || !window.MAZE_PLAYGROUND_WEIGHTS) return;
  var net = A.loadWeights(window.MAZE_PLAYGROUND_WEIGHTS);
  var selftest = /[?&]selftest=1/.test(window.location.search);
  var ui = {mode: 'wall', timer: null, delay: selftest ? 10 : 250};
  var s = {walls: [], start: [0, 0], target: [8, 8], agent: [0, 0], steps: 0, done: '', trail: []};

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
  function same(a, b) { return a[0] === b[0] && a[1] === b[1]; }
  function maze() {
    return {rows: ROWS, cols: COLS, walls: s.walls, agent: s.agent, target: s.target};
  }

  // --- layout ------------------------------------------------------------------------------
  root.textContent = '';
  var modes = el('div', 'pg-row');
  modes.appendChild(el('span', 'pg-label', 'Click a cell to: '));
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
  controls.appendChild(button('Random maze', function () { randomMaze(Math.random); },
                              'pg-random'));
  controls.appendChild(button('Clear walls', function () { clearWalls(); }, 'pg-clear'));
  var board = el('div', 'pg-board');
  board.setAttribute('role', 'grid');
  var cells = [];
  for (var r = 0; r < ROWS; r++) {
    for (var c = 0; c < COLS; c++) {
      var cell = el('button', 'pg-cell');
      cell.type = 'button';
      cell.setAttribute('data-row', r);
      cell.setAttribute('data-col', c);
      cell.addEventListener('click', onCell.bind(null, r, c));
      board.appendChild(cell);
      cells.push(cell);
    }
  }
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
  var legend = el('div', 'pg-small', 'Green: agent (outlined: its start). Red: target. Dots: a ' +
                  'shortest path (breadth-first search). Shaded: cells the agent has visited.');
  side.appendChild(legend);
  var status = el('p', 'pg-status');
  status.setAttribute('aria-live', 'polite');
  var main = el('div', 'pg-main');
  main.appendChild(board);
  main.appendChild(side);
  [modes, controls, main, status].forEach(function (e) { root.appendChild(e); });

  // --- state changes -----------------------------------------------------------------------
  function setMode(mode) {
    ui.mode = mode;
    Object.keys(modeButtons).forEach(function (k) {
      modeButtons[k].classList.toggle('pg-active', k === mode);
    });
  }
  function onCell(r, c) {
    var i = r * COLS + c, at = [r, c];
    stop();
    if (ui.mode === 'wall') {
      if (same(at, s.start) || same(at, s.target)) return;
      s.walls[i] = !s.walls[i];
    } else if (!s.walls[i]) {
      if (ui.mode === 'start' && !same(at, s.target)) s.start = at;
      if (ui.mode === 'target' && !same(at, s.start)) s.target = at;
    }
    restart();
  }
  function restart() {
    s.agent = s.start.slice();
    s.steps = 0;
    s.done = '';
    s.trail = [s.agent];
    draw();
  }
  function clearWalls() {
    stop();
    for (var i = 0; i < ROWS * COLS; i++) s.walls[i] = false;
    restart();
  }
  function randomMaze(random) {
    stop();
    s.walls = A.randomWalls(ROWS, COLS, random);
    var free = [];
    for (var i = 0; i < ROWS * COLS; i++) {
      if (!s.walls[i]) free.push([Math.floor(i / COLS), i % COLS]);
    }
    s.start = free[Math.floor(random() * free.length)];
    do { s.target = free[Math.floor(random() * free.length)]; } while (same(s.target, s.start));
    restart();
  }
  function advance() {
    if (s.done || same(s.agent, s.target)) return false;
    if (A.actionMask(maze()).indexOf(true) < 0) { s.done = 'no legal move'; draw(); return false; }
    var result = A.step(maze(), A.policy(net, maze()).greedy, s.steps);
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
    ui.timer = setInterval(function () { if (!advance()) stop(); }, ui.delay);
  }

  // --- drawing -----------------------------------------------------------------------------
  function draw() {
    var path = A.shortestPath(maze(), s.agent, s.target), onPath = {}, seen = {};
    (path || []).forEach(function (p) { onPath[p[0] * COLS + p[1]] = true; });
    s.trail.forEach(function (p) { seen[p[0] * COLS + p[1]] = true; });
    cells.forEach(function (cell, i) {
      var at = [Math.floor(i / COLS), i % COLS], cls = 'pg-cell', label = 'free';
      if (s.walls[i]) { cls += ' pg-wall'; label = 'wall'; }
      if (seen[i]) cls += ' pg-visited';
      if (same(at, s.start)) cls += ' pg-start';
      if (onPath[i]) cls += ' pg-path';
      if (same(at, s.target)) { cls += ' pg-target'; label = 'target'; }
      if (same(at, s.agent)) { cls += ' pg-agent'; label = 'agent'; }
      cell.className = cls;
      cell.setAttribute('aria-label', 'row ' + at[0] + ', column ' + at[1] + ': ' + label);
    });
    var shortest = A.shortestPath(maze(), s.start, s.target);
    var stuck = A.actionMask(maze()).indexOf(true) < 0, p = null;
    if (!same(s.agent, s.target) && !stuck) p = A.policy(net, maze());
    bars.forEach(function (b, a) {
      var prob = p ? p.probs[a] : 0;
      b.bar.style.width = (100 * prob).toFixed(1) + '%';
      b.value.textContent = p ? prob.toFixed(3) : '-';
      b.row.classList.toggle('pg-greedy', p !== null && p.greedy === a);
      b.row.classList.toggle('pg-illegal', p !== null && !p.mask[a]);
    });
    valueLine.textContent = p ? 'Value estimate V(s): ' + p.value.toFixed(3) +
      '. The agent takes the most probable move (greedy).' : '';
    var limit = ROWS * COLS, best = shortest ? shortest.length - 1 : null, text;
    if (s.done === 'target' || same(s.agent, s.target)) {
      text = 'Reached the target in ' + s.steps + ' steps (shortest path: ' + best + ').';
    } else if (s.done === 'time limit') {
      text = 'Time limit: ' + limit + ' steps without reaching the target (shortest path: ' +
        best + ').';
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
  }

  // --- the default maze, and the self-test -------------------------------------------------
  s.walls = A.randomWalls(ROWS, COLS, A.seededRandom(4));  // one the agent solves, (0, 0) to (8, 8)
  setMode('wall');
  restart();

  if (selftest) {
    // A maze drawn by clicks ('#' wall), then the start (S) and the target (T), then Run.
    var layout = ['.#.#...#..', '.#.#.#.#.#', '.....#....', '.#.#####.#', '.#.#...#S.',
                  '.#.#.#.#.#', '.#..T#.#..', '.#.#######', '.#........', '.#.#.#.#.#'];
    var click = function (r, c) { cells[r * COLS + c].click(); };
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
    runButton.click();
    var waited = 0, poll = setInterval(function () {
      waited += 1;
      if (ui.timer === null || waited > 400) {
        clearInterval(poll);
        var ok = root.getAttribute('data-outcome') === 'target';
        root.setAttribute('data-selftest', ok ? 'passed' : 'failed: ' + status.textContent);
      }
    }, 20);
  }
})();
