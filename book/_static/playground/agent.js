/*
 * The maze playground's model of jumanji's Maze and of the PPO chapter's two saved agents, in
 * plain JavaScript (no dependencies, no DOM): it runs in a browser and in the tests' V8.
 *
 * A maze is {rows, cols, walls, agent, target}: walls an array of rows * cols booleans
 * (or 0/1) in row-major order, agent and target [row, col]. Actions follow jumanji's Maze:
 * 0 up, 1 right, 2 down, 3 left.
 *
 * The agents, with the weights that tools/export_playground.py writes to weights.js:
 * - 'planning': companion.agents.ppo.ValueIterationActorCritic (planning.py) with
 *   iterations=None: max-plus value iteration until the values settle, then the policy and
 *   value read off the values around the agent. startBackups() and backup() expose the
 *   iteration one backup at a time, for the page's value map.
 * - 'propagation': companion.agents.ppo.PropagationActorCritic (networks.py).
 * policy() adds masked_logits (illegal moves get probability 0) and the softmax (policy.py);
 * step() is jumanji's Maze.step; shortestPath() a breadth-first search. The arithmetic is
 * float64: tests/book/test_playground.py compares it with JAX in float64 and in float32.
 */
(function (root) {
  'use strict';

  var MOVES = [[-1, 0], [0, 1], [1, 0], [0, -1]];
  var ACTION_NAMES = ['up', 'right', 'down', 'left'];
  var FORMAT = 'drljax-maze-playground-2';
  var AGENTS = ['planning', 'propagation'];
  var UNREACHED = -1e4;  // planning.py's UNREACHED: a cell no value has reached

  function fail(message) {
    throw new Error('maze playground: ' + message);
  }

  function checkCell(maze, cell, name) {
    if (!cell || cell.length !== 2 || cell[0] !== (cell[0] | 0) || cell[1] !== (cell[1] | 0)) {
      fail(name + ': expected [row, col] integers, got ' + JSON.stringify(cell));
    }
    if (cell[0] < 0 || cell[0] >= maze.rows || cell[1] < 0 || cell[1] >= maze.cols) {
      fail(name + ': cell ' + JSON.stringify(cell) + ' is outside the ' + maze.rows + 'x' +
           maze.cols + ' maze');
    }
    if (maze.walls[cell[0] * maze.cols + cell[1]]) {
      fail(name + ': cell ' + JSON.stringify(cell) + ' is a wall');
    }
  }

  /** Throws a clear Error unless maze is {rows, cols, walls (rows*cols), agent, target}. */
  function checkMaze(maze) {
    if (!maze || !(maze.rows >= 1) || !(maze.cols >= 1)) fail('maze: expected rows and cols >= 1');
    if (!maze.walls || maze.walls.length !== maze.rows * maze.cols) {
      fail('maze.walls: expected ' + maze.rows * maze.cols + ' entries (rows * cols), got ' +
           (maze.walls ? maze.walls.length : maze.walls));
    }
    checkCell(maze, maze.agent, 'maze.agent');
    checkCell(maze, maze.target, 'maze.target');
  }

  function isFree(maze, r, c) {
    return r >= 0 && r < maze.rows && c >= 0 && c < maze.cols && !maze.walls[r * maze.cols + c];
  }

  /** Legal moves from cell (default: the agent's): 4 booleans, as jumanji's action_mask. */
  function actionMask(maze, cell) {
    var at = cell || maze.agent;
    return MOVES.map(function (m) { return isFree(maze, at[0] + m[0], at[1] + m[1]); });
  }

  /**
   * One agent of the exported weights, checked: a net for forward() and policy(). name is
   * 'planning' (default) or 'propagation'.
   */
  function loadWeights(exported, name) {
    if (!exported || exported.format !== FORMAT) {
      fail('weights: expected format ' + FORMAT + ' (run tools/export_playground.py)');
    }
    var agent = name === undefined ? 'planning' : name;
    if (AGENTS.indexOf(agent) < 0) {
      fail('agent: expected one of ' + AGENTS.join(', ') + ', got ' + JSON.stringify(name));
    }
    var entry = exported.agents && exported.agents[agent];
    if (!entry) fail('weights: no agent ' + agent + ' (run tools/export_playground.py)');
    var a = entry.arrays;
    function get(key, shape) {
      var item = a[key];
      if (!item || JSON.stringify(item.shape) !== JSON.stringify(shape)) {
        fail('weights: ' + agent + ' ' + key + ' should have shape ' + JSON.stringify(shape));
      }
      return Float64Array.from(item.data);
    }
    function dense(inSize) {  // the fully connected layers (ReLU) of the value or both heads
      var layers = [];
      for (var i = 0; a['dense.' + i + '.weight']; i++) {
        var out = a['dense.' + i + '.weight'].shape[0];
        layers.push({w: get('dense.' + i + '.weight', [out, inSize]),
                     b: get('dense.' + i + '.bias', [out]), in: inSize, out: out});
        inSize = out;
      }
      return {layers: layers, out: inSize};
    }
    var width = a.embed.shape[1], net, torso;
    if (entry.network === 'value_iteration') {
      var hidden = a['policy_hidden.weight'].shape[0];
      net = {
        kind: 'planning', name: agent, width: width,
        embed: get('embed', [2, width]),
        cost: get('log_cost', [width]).map(Math.exp),
        policyHidden: {w: get('policy_hidden.weight', [hidden, width]),
                       b: get('policy_hidden.bias', [hidden]), in: width, out: hidden},
        policyOut: {w: get('policy_out.weight', [1, hidden]), b: get('policy_out.bias', [1]),
                    in: hidden, out: 1},
        cache: {key: null, values: null}
      };
    } else if (entry.network === 'propagation') {
      net = {
        kind: 'propagation', name: agent, width: width, iterations: entry.iterations,
        embed: get('embed', [3, width]),
        wSelf: get('w_self', [width, width]),
        wNbr: get('w_nbr', [width, width]),
        wIn: get('w_in', [3, width]),
        bias: get('bias', [width])
      };
    } else {
      fail('weights: unknown network ' + JSON.stringify(entry.network));
    }
    torso = dense(5 * width);
    net.dense = torso.layers;
    if (net.kind === 'propagation') {
      net.policy = {w: get('policy.weight', [4, torso.out]), b: get('policy.bias', [4]),
                    in: torso.out, out: 4};
    }
    net.value = {w: get('value.weight', [1, torso.out]), b: get('value.bias', [1]),
                 in: torso.out, out: 1};
    return net;
  }

  function linear(layer, x, relu) {
    var y = new Float64Array(layer.out);
    for (var o = 0; o < layer.out; o++) {
      var s = 0;
      for (var i = 0; i < layer.in; i++) s += layer.w[o * layer.in + i] * x[i];
      s += layer.b[o];
      y[o] = relu && s < 0 ? 0 : s;
    }
    return y;
  }

  /** nbr[d][cell]: the neighbour in direction d if both cells are free (open_to), else -1. */
  function openNeighbours(maze) {
    var R = maze.rows, C = maze.cols;
    return MOVES.map(function (m) {
      var out = new Int32Array(R * C);
      for (var r = 0; r < R; r++) {
        for (var c = 0; c < C; c++) {
          var ok = isFree(maze, r, c) && isFree(maze, r + m[0], c + m[1]);
          out[r * C + c] = ok ? (r + m[0]) * C + c + m[1] : -1;
        }
      }
      return out;
    });
  }

  /**
   * The planning agent's value iteration, one backup at a time: returns {values (rows * cols
   * * width, row-major, then channel), backups: 0, width}. planning.py's v_0: log of the
   * positive source score of each cell (wall and target channels through embed), UNREACHED
   * where it is 0.
   */
  function startBackups(net, maze) {
    if (net.kind !== 'planning') fail('startBackups: the ' + net.name + ' agent does not plan');
    var N = maze.rows * maze.cols, W = net.width, v = new Float64Array(N * W);
    var goal = maze.target[0] * maze.cols + maze.target[1];
    for (var cell = 0; cell < N; cell++) {
      var wall = maze.walls[cell] ? 1 : 0, target = cell === goal ? 1 : 0;
      for (var k = 0; k < W; k++) {
        var source = wall * net.embed[k] + target * net.embed[W + k];
        v[cell * W + k] = source > 0 ? Math.log(Math.max(source, 1e-30)) : UNREACHED;
      }
    }
    return {values: v, next: new Float64Array(N * W), nbr: openNeighbours(maze), width: W,
            cost: net.cost, walls: Array.prototype.slice.call(maze.walls), backups: 0,
            settled: N <= 1};
  }

  /**
   * One max-plus backup, v(s) <- max(v(s), max over open neighbours s' of v(s') - cost),
   * in place. Returns true if a value changed (false: the values have settled).
   */
  function backup(state) {
    var v = state.values, out = state.next, W = state.width, N = v.length / W, changed = false;
    for (var cell = 0; cell < N; cell++) {
      for (var k = 0; k < W; k++) {
        var best = v[cell * W + k];
        for (var d = 0; d < 4; d++) {
          var n = state.nbr[d][cell];
          if (n >= 0) {
            var moved = v[n * W + k] - state.cost[k];
            if (moved > best) best = moved;
          }
        }
        if (best !== v[cell * W + k]) changed = true;
        out[cell * W + k] = best;
      }
    }
    state.next = v;
    state.values = out;
    if (changed) state.backups += 1;
    else state.settled = true;
    return changed;
  }

  /** The settled values of the planning agent (at most rows * cols - 1 backups, as JAX's). */
  function planningValues(net, maze) {
    var key = maze.rows + 'x' + maze.cols + ':' + maze.target + ':' +
      Array.prototype.map.call(maze.walls, function (w) { return w ? 1 : 0; }).join('');
    if (net.cache.key === key) return net.cache.state;
    var state = startBackups(net, maze), limit = maze.rows * maze.cols - 1;
    while (!state.settled && state.backups < limit) backup(state);
    net.cache = {key: key, state: state};
    return state;
  }

  /**
   * The value map to draw: per cell the mean over the value channels, or null for a wall
   * or a cell that no value has reached. state is startBackups() after some backups.
   */
  function valueMap(state) {
    var W = state.width, N = state.values.length / W, out = [];
    for (var cell = 0; cell < N; cell++) {
      var total = 0, reached = true;
      for (var k = 0; k < W; k++) {
        var x = state.values[cell * W + k];
        if (x <= UNREACHED) reached = false;
        total += x;
      }
      out.push(reached && !state.walls[cell] ? total / W : null);
    }
    return out;
  }

  function clip(x, lo, hi) { return x < lo ? lo : x > hi ? hi : x; }

  /** {logits, value} of ValueIterationActorCritic.__call__ from the settled values. */
  function forwardPlanning(net, maze) {
    var state = planningValues(net, maze), v = state.values, W = net.width, k, d;
    var a = maze.agent[0] * maze.cols + maze.agent[1];
    var logits = [], z = new Float64Array(5 * W);
    for (k = 0; k < W; k++) z[k] = clip(v[a * W + k] / 10, -10, 10);
    for (d = 0; d < 4; d++) {
      var n = state.nbr[d][a], row = new Float64Array(W);
      if (n >= 0) for (k = 0; k < W; k++) row[k] = clip(v[n * W + k] - v[a * W + k], -10, 10);
      for (k = 0; k < W; k++) z[(d + 1) * W + k] = row[k];
      logits.push(linear(net.policyOut, linear(net.policyHidden, row, true), false)[0]);
    }
    for (var l = 0; l < net.dense.length; l++) z = linear(net.dense[l], z, true);
    return {logits: logits, value: linear(net.value, z, false)[0]};
  }

  /** The network's {logits: 4 numbers, value} for one maze, by the net's kind. */
  function forward(net, maze) {
    return net.kind === 'planning' ? forwardPlanning(net, maze) : forwardPropagation(net, maze);
  }

  /** {logits, value} of PropagationActorCritic.__call__. */
  function forwardPropagation(net, maze) {
    var R = maze.rows, C = maze.cols, N = R * C, W = net.width, d, k, j, cell;
    var x = new Float64Array(N * 3);
    for (cell = 0; cell < N; cell++) x[cell * 3] = maze.walls[cell] ? 1 : 0;
    x[(maze.agent[0] * C + maze.agent[1]) * 3 + 1] = 1;
    x[(maze.target[0] * C + maze.target[1]) * 3 + 2] = 1;
    var nbr = openNeighbours(maze);
    var injected = new Float64Array(N * W), h = new Float64Array(N * W);
    for (cell = 0; cell < N; cell++) {
      for (k = 0; k < W; k++) {
        var e = 0, u = 0;
        for (j = 0; j < 3; j++) {
          e += x[cell * 3 + j] * net.embed[j * W + k];
          u += x[cell * 3 + j] * net.wIn[j * W + k];
        }
        h[cell * W + k] = Math.tanh(e);
        injected[cell * W + k] = u + net.bias[k];
      }
    }
    var next = new Float64Array(N * W), msg = new Float64Array(W);
    for (var it = 0; it < net.iterations; it++) {
      for (cell = 0; cell < N; cell++) {
        for (k = 0; k < W; k++) msg[k] = 0;
        for (d = 0; d < 4; d++) {
          var n = nbr[d][cell];
          if (n >= 0) for (k = 0; k < W; k++) msg[k] += h[n * W + k];
        }
        for (k = 0; k < W; k++) {
          var s = 0, t = 0;
          for (j = 0; j < W; j++) {
            s += h[cell * W + j] * net.wSelf[j * W + k];
            t += msg[j] * net.wNbr[j * W + k];
          }
          next[cell * W + k] = Math.tanh(s + t + injected[cell * W + k]);
        }
      }
      var swap = h; h = next; next = swap;
    }
    var a = maze.agent[0] * C + maze.agent[1];
    var z = new Float64Array(5 * W);
    for (k = 0; k < W; k++) z[k] = h[a * W + k];
    for (d = 0; d < 4; d++) {
      var na = nbr[d][a];
      if (na >= 0) for (k = 0; k < W; k++) z[(d + 1) * W + k] = h[na * W + k];
    }
    for (var l = 0; l < net.dense.length; l++) z = linear(net.dense[l], z, true);
    return {logits: Array.from(linear(net.policy, z, false)),
            value: linear(net.value, z, false)[0]};
  }

  /**
   * The agent's policy in one maze: {logits, mask, probs (0 for illegal moves), greedy (argmax
   * of the masked logits, the first on ties), value}. Throws if the agent has no legal move.
   */
  function policy(net, maze) {
    checkMaze(maze);
    var mask = actionMask(maze);
    if (mask.indexOf(true) < 0) fail('the agent has no legal move');
    var out = forward(net, maze), best = -1, top = -Infinity, total = 0, a;
    for (a = 0; a < 4; a++) if (mask[a] && out.logits[a] > top) { top = out.logits[a]; best = a; }
    var probs = out.logits.map(function (v, i) { return mask[i] ? Math.exp(v - top) : 0; });
    for (a = 0; a < 4; a++) total += probs[a];
    return {logits: out.logits, mask: mask, probs: probs.map(function (p) { return p / total; }),
            greedy: best, value: out.value};
  }

  /** A shortest path [[r, c], ...] from start to target (breadth-first), or null if none. */
  function shortestPath(maze, start, target) {
    var from = start || maze.agent, to = target || maze.target, C = maze.cols;
    var previous = new Int32Array(maze.rows * C).fill(-2);
    var queue = [from[0] * C + from[1]], head = 0, goal = to[0] * C + to[1];
    previous[queue[0]] = -1;
    while (head < queue.length) {
      var cell = queue[head++];
      if (cell === goal) {
        var path = [];
        for (var p = cell; p >= 0; p = previous[p]) path.unshift([Math.floor(p / C), p % C]);
        return path;
      }
      var r = Math.floor(cell / C), c = cell % C;
      for (var d = 0; d < 4; d++) {
        var nr = r + MOVES[d][0], nc = c + MOVES[d][1];
        if (isFree(maze, nr, nc) && previous[nr * C + nc] === -2) {
          previous[nr * C + nc] = cell;
          queue.push(nr * C + nc);
        }
      }
    }
    return null;
  }

  /**
   * jumanji's Maze.step: a legal action moves the agent, an illegal one is a no-op; either
   * counts a step. Returns {agent, stepCount, done, reason}, reason 'target', 'no legal move',
   * 'time limit' or ''. timeLimit defaults to rows * cols, as jumanji's.
   */
  function step(maze, action, stepCount, timeLimit) {
    checkMaze(maze);
    if ([0, 1, 2, 3].indexOf(action) < 0) fail('action: expected 0, 1, 2 or 3, got ' + action);
    var limit = timeLimit || maze.rows * maze.cols, at = maze.agent;
    if (actionMask(maze)[action]) at = [at[0] + MOVES[action][0], at[1] + MOVES[action][1]];
    var count = (stepCount || 0) + 1, reason = '';
    if (at[0] === maze.target[0] && at[1] === maze.target[1]) reason = 'target';
    else if (actionMask(maze, at).indexOf(true) < 0) reason = 'no legal move';
    else if (count >= limit) reason = 'time limit';
    return {agent: at, stepCount: count, done: reason !== '', reason: reason};
  }

  /**
   * Walls of a random maze by recursive division, in the style of jumanji's generator: walls on
   * odd rows and columns, each with one passage at an even coordinate. random() returns a
   * number in [0, 1) (default Math.random). Returns rows * cols booleans.
   */
  function randomWalls(rows, cols, random) {
    var rand = random || Math.random, walls = [], i;
    for (i = 0; i < rows * cols; i++) walls.push(false);
    function pick(lo, hi, parity) {  // a number in [lo, hi) with lo + offset of given parity
      var options = [];
      for (var v = lo; v < hi; v++) if ((v - lo) % 2 === parity) options.push(v);
      return options[Math.floor(rand() * options.length)];
    }
    var stack = [[0, 0, rows, cols]];
    while (stack.length) {
      var ch = stack.pop(), r0 = ch[0], c0 = ch[1], h = ch[2], w = ch[3];
      if (h < 3 && w < 3) continue;
      var vertical = w >= 3 && (h < 3 || w > h || (w === h && rand() < 0.5));
      if (vertical) {
        var wc = pick(c0, c0 + w, 1), gap = pick(r0, r0 + h, 0);
        for (i = r0; i < r0 + h; i++) if (i !== gap) walls[i * cols + wc] = true;
        stack.push([r0, c0, h, wc - c0], [r0, wc + 1, h, c0 + w - wc - 1]);
      } else {
        var wr = pick(r0, r0 + h, 1), gapc = pick(c0, c0 + w, 0);
        for (i = c0; i < c0 + w; i++) if (i !== gapc) walls[wr * cols + i] = true;
        stack.push([r0, c0, wr - r0, w], [wr + 1, c0, r0 + h - wr - 1, w]);
      }
    }
    return walls;
  }

  /** A small seeded generator (mulberry32) for reproducible random mazes: returns random(). */
  function seededRandom(seed) {
    var s = seed >>> 0;
    return function () {
      s = (s + 0x6D2B79F5) >>> 0;
      var t = Math.imul(s ^ (s >>> 15), 1 | s);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  /**
   * For the tests: the policy of agent name in many mazes at once. batch = {rows, cols, walls:
   * one string of '0'/'1' per maze, states: [[mazeIndex, agentRow, agentCol, targetRow,
   * targetCol], ...]}. Returns {probs: [[4 numbers], ...], greedy, value, logits}.
   */
  function policyBatch(exported, batch, name) {
    var net = loadWeights(exported, name), out = {probs: [], greedy: [], value: [], logits: []};
    var grids = batch.walls.map(function (s) {
      return s.split('').map(function (ch) { return ch === '1'; });
    });
    batch.states.forEach(function (st) {
      var p = policy(net, {rows: batch.rows, cols: batch.cols, walls: grids[st[0]],
                           agent: [st[1], st[2]], target: [st[3], st[4]]});
      out.probs.push(p.probs);
      out.greedy.push(p.greedy);
      out.value.push(p.value);
      out.logits.push(p.logits);
    });
    return out;
  }

  root.MazeAgent = {
    MOVES: MOVES, ACTION_NAMES: ACTION_NAMES, AGENTS: AGENTS, UNREACHED: UNREACHED,
    checkMaze: checkMaze, actionMask: actionMask, loadWeights: loadWeights, forward: forward,
    policy: policy, startBackups: startBackups, backup: backup, planningValues: planningValues,
    valueMap: valueMap, shortestPath: shortestPath, step: step, randomWalls: randomWalls,
    seededRandom: seededRandom, policyBatch: policyBatch
  };
})(typeof globalThis !== 'undefined' ? globalThis : this);
