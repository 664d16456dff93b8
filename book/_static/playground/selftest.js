/*
 * The maze playground's self-test, which playground.js runs on ?selftest=1: random mazes of
 * three sizes solved along shortest paths, the value map's backups watched, the agent
 * switched, a maze drawn by clicks and run by each agent at two speeds, in the page's language.
 * It writes "passed" or "failed: ..." to data-selftest and its findings to
 * data-selftest-report (for .ci/check_site.py); the report's values do not depend on the
 * language (outcome codes and counts), apart from wallNotice, the notice a reader sees.
 *
 * It works the controls it finds in the page; `pg` is what playground.js hands over besides:
 * MazeAgent (A), the app's element (root), the episode (state), the UI state (ui), the words
 * of the page's language (t, with t.lang), the speeds, advance, setAgent and the value line.
 */
window.MazePlaygroundSelfTest = function (pg) {
  'use strict';
  var A = pg.A, root = pg.root, s = pg.state, ui = pg.ui, t = pg.t, SPEEDS = pg.speeds;
  var report = {language: t.lang}, failures = [];
  function find(selector) { return root.querySelector(selector); }
  function cells() { return root.querySelectorAll('.pg-cell'); }
  var rows = find('.pg-rows'), cols = find('.pg-cols'), agent = find('.pg-agent-select');
  var speed = find('.pg-speed'), runButton = find('.pg-run'), notice = find('.pg-notice');
  var modes = {wall: find('[data-mode="wall"]'), start: find('[data-mode="start"]'),
               target: find('[data-mode="target"]')};
  function same(a, b) { return a[0] === b[0] && a[1] === b[1]; }
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
    while (guard-- > 0 && pg.advance()) { /* the Step button's action, without the timer */ }
  }
  // 1. Random mazes of three sizes: the planning agent walks a shortest path every time.
  ui.random = A.seededRandom(2026);
  pg.setAgent('planning');
  [[10, 10], [20, 20], [9, 24]].forEach(function (size) {
    change(rows, size[0]);
    change(cols, size[1]);
    check(cells().length === size[0] * size[1], 'the board has ' + cells().length +
          ' cells at ' + size.join('x'));
    var solved = 0;
    for (var k = 0; k < 100; k++) {
      if (k > 0) find('.pg-random').click();
      var best = +root.getAttribute('data-shortest');
      stepToEnd();
      if (s.done === 'target' && s.steps === best) solved += 1;
    }
    report[size.join('x')] = solved + '/100';
    check(solved === 100, size.join('x') + ': ' + solved + ' of 100 along a shortest path');
  });
  // 2. The value map: one coloured cell (the target) before the backups, every free cell
  //    once they settle, and nothing for the propagation agent.
  change(rows, 10);
  change(cols, 10);
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
    change(agent, 'propagation');
    check(+root.getAttribute('data-coloured') === 0 && root.getAttribute('data-agent') ===
          'propagation', 'the propagation agent shows a value map');
    change(agent, 'planning');
    drawnMaze();
  }, 50);
  // 3. A maze drawn by clicks ('#' wall, S start, T target), run by each agent in turn at two
  //    speeds: both reach the target, and a step takes the speed's time.
  function drawnMaze() {
    var layout = ['.#.#...#..', '.#.#.#.#.#', '.....#....', '.#.#####.#', '.#.#...#S.',
                  '.#.#.#.#.#', '.#..T#.#..', '.#.#######', '.#........', '.#.#.#.#.#'];
    var click = function (r, c) { cells()[r * s.cols + c].click(); };
    find('.pg-clear').click();
    layout.forEach(function (row, r) {
      var c = row.indexOf('S');
      if (c >= 0) { modes.start.click(); click(r, c); }
    });
    layout.forEach(function (row, r) {
      var c = row.indexOf('T');
      if (c >= 0) { modes.target.click(); click(r, c); }
    });
    modes.wall.click();
    layout.forEach(function (row, r) {
      row.split('').forEach(function (ch, c) { if (ch === '#') click(r, c); });
    });
    // A start placed on a wall stays where it was, and the page says why, naming the wall
    // button; the notice goes with the next mode. The value line says what bounds the return.
    var startBefore = s.start.slice();
    modes.start.click();
    click(0, 1);
    report.wallNotice = notice.textContent;
    check(same(s.start, startBefore) &&
          notice.textContent === t('startOnWall', {button: t('modeWall')}),
          'the start placed on a wall: "' + notice.textContent + '"');
    modes.wall.click();
    check(notice.textContent === '', 'the notice stayed after the mode changed');
    check(pg.valueLine.textContent.indexOf(t('returnBound')) >= 0,
          'the value line: ' + pg.valueLine.textContent);
    var runs = [['planning', SPEEDS.length - 1], ['propagation', 2]];
    report.runs = [];
    (function next() {
      if (!runs.length) { finish(); return; }
      var run = runs.shift();
      change(agent, run[0]);
      change(speed, run[1]);
      var t0 = Date.now();
      runButton.click();
      check(runButton.textContent === t('pause'), 'the running button reads ' +
            runButton.textContent);
      var poll2 = setInterval(function () {
        if (ui.timer !== null && Date.now() - t0 < 60000) return;
        clearInterval(poll2);
        var perStep = (Date.now() - t0) / Math.max(1, s.steps), delay = 1000 / SPEEDS[run[1]];
        report.runs.push({agent: run[0], outcome: s.done, steps: s.steps,
                          msPerStep: Math.round(perStep)});
        var reached = t('reached', {steps: s.steps, best: +root.getAttribute('data-shortest')});
        check(s.done === 'target' && find('.pg-status').textContent === reached,
              run[0] + ' on the drawn maze: ' + find('.pg-status').textContent);
        check(runButton.textContent === t('run'), 'the stopped button reads ' +
              runButton.textContent);
        check(perStep >= 0.8 * delay && perStep <= 1.5 * delay + 20, run[0] + ' took ' +
              Math.round(perStep) + ' ms a step at ' + SPEEDS[run[1]] + ' steps/s');
        next();
      }, 20);
    })();
  }
};
