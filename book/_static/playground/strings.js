/*
 * The maze playground's words (playground.js), in English and in Japanese: every label,
 * message and aria-label the page shows. {name} in a message stands for a value playground.js
 * fills in; numbers are written the same in both languages. Edit the English block; the
 * Japanese block is written by `make catalogues` from locales/ja/LC_MESSAGES/playground.po
 * (tools/playground_messages.py), where a changed English message turns fuzzy.
 */
var MAZE_PLAYGROUND_STRINGS = {
  en: {
    agentLabel: 'Agent:',
    agentPlanning: 'planning (value iteration)',
    agentPropagation: 'propagation',
    sizeLabel: 'Size:',
    rowsAria: 'rows',
    rowsUnit: 'rows ×',
    colsAria: 'columns',
    colsUnit: 'columns',
    speedLabel: 'Speed:',
    speedAria: 'speed',
    speedValue: '{speed} steps/s',
    clickLabel: 'Click a cell to:',
    modeWall: 'toggle a wall',
    modeStart: 'place the start',
    modeTarget: 'place the target',
    step: 'Step',
    run: 'Run',
    pause: 'Pause',
    reset: 'Reset',
    randomMaze: 'Random maze',
    clearWalls: 'Clear walls',
    valueMapToggle: 'value map',
    policyHeading: 'Policy in this state',
    moveUp: 'up',
    moveRight: 'right',
    moveDown: 'down',
    moveLeft: 'left',
    valueLine: "Value estimate V(s): {value}, the critic's learned guess of the return, {bound}. " +
      'The agent takes the most probable move (greedy).',
    valueLineOver: "Value estimate V(s): {value}, the critic's learned guess of the return, " +
      '{bound}: an estimate, not a bound, {excess} too high here. The agent takes the most ' +
      'probable move (greedy).',
    returnBound: 'which is at most 1 (the reward at the target)',
    valueMapHeading: 'Value map',
    mapLow: 'low',
    mapHigh: 'high (target)',
    mapPropagation: 'The propagation agent has no value map: its 8 features per cell are ' +
      'learned, not values.',
    mapSpreading: 'After {done} of {total} backups: the mean of the {width} value channels. ' +
      'Uncoloured cells have no value yet.',
    mapSettled: 'After {done} of {total} backups: the mean of the {width} value channels. ' +
      'Settled: a free cell left uncoloured has no way to the target.',
    legend: 'Green: the agent. Red: the target (ringed red once the agent stands on it). ' +
      'Black ring: the start. Dots: a shortest path from the start (breadth-first search). ' +
      'Orange rings: cells the agent has visited.',
    cell: 'row {row}, column {col}: {what}',
    cellFree: 'free',
    cellWall: 'wall',
    cellTarget: 'target',
    cellAgent: 'agent',
    holdsStart: 'This cell holds the start, which cannot become a wall: move the start first ' +
      '("{button}").',
    holdsTarget: 'This cell holds the target, which cannot become a wall: move the target ' +
      'first ("{button}").',
    startOnWall: 'The start cannot go on a wall: click a free cell, or clear this wall first ' +
      'with "{button}".',
    startOnTarget: 'The start cannot go on the target: click a free cell.',
    targetOnWall: 'The target cannot go on a wall: click a free cell, or clear this wall first ' +
      'with "{button}".',
    targetOnStart: 'The target cannot go on the start: click a free cell.',
    reached: 'Reached the target in {steps} steps (shortest path: {best}).',
    timeLimit: 'Time limit: {limit} steps without reaching the target (shortest path: {best} ' +
      'steps).',
    timeLimitNoPath: 'Time limit: {limit} steps without reaching the target (no path from the ' +
      'start).',
    noLegalMove: 'The agent has no legal move: every neighbour is a wall or off the grid.',
    noPath: 'No path: walls separate the start from the target. The agent will walk until the ' +
      'time limit of {limit} steps.',
    progress: 'Step {steps} of at most {limit}. Shortest path from the start: {best} steps.'
  },
  ja: {
    agentLabel: "エージェント：",
    agentPlanning: "planning（価値反復）",
    agentPropagation: "propagation",
    sizeLabel: "サイズ：",
    rowsAria: "行数",
    rowsUnit: "行 ×",
    colsAria: "列数",
    colsUnit: "列",
    speedLabel: "速度：",
    speedAria: "速度",
    speedValue: "毎秒 {speed} ステップ",
    clickLabel: "クリックの動作：",
    modeWall: "壁の切り替え",
    modeStart: "スタートの配置",
    modeTarget: "ゴールの配置",
    step: "1 ステップ",
    run: "実行",
    pause: "一時停止",
    reset: "リセット",
    randomMaze: "ランダムな迷路",
    clearWalls: "壁をすべて消去",
    valueMapToggle: "価値マップ",
    policyHeading: "この状態での方策",
    moveUp: "上",
    moveRight: "右",
    moveDown: "下",
    moveLeft: "左",
    valueLine: "価値の推定値 V(s)：{value}。クリティックが学習した収益の見積もりです。{bound}。エージェントは最も確率の高い移動を選びます（貪欲方策）。",
    valueLineOver: "価値の推定値 V(s)：{value}。クリティックが学習した収益の見積もりです。{bound}。これは推定値で上限に縛られないため、ここでは 1 を {excess} 上回っています。エージェントは最も確率の高い移動を選びます（貪欲方策）。",
    returnBound: "収益は最大でも 1（ゴールでの報酬）です",
    valueMapHeading: "価値マップ",
    mapLow: "低",
    mapHigh: "高（ゴール）",
    mapPropagation: "伝播エージェントには価値マップがありません。1 マスあたり 8 個の特徴量は学習で得たもので、価値ではありません。",
    mapSpreading: "全 {total} 回のうち {done} 回のバックアップを終えた時点の、{width} 個の価値チャネルの平均です。色の付いていないマスには、まだ価値がありません。",
    mapSettled: "全 {total} 回のうち {done} 回のバックアップを終えた時点の、{width} 個の価値チャネルの平均です。値は落ち着きました。色の付いていない空きマスからは、ゴールへの道がありません。",
    legend: "緑：エージェント。赤：ゴール（エージェントが乗ると赤い枠になります）。黒い枠：スタート。点：スタートからの最短経路（幅優先探索）。オレンジの枠：エージェントが通ったマス。",
    cell: "行 {row}・列 {col}：{what}",
    cellFree: "空き",
    cellWall: "壁",
    cellTarget: "ゴール",
    cellAgent: "エージェント",
    holdsStart: "このマスにはスタートがあるため、壁にできません。先に「{button}」でスタートを別のマスに移してください。",
    holdsTarget: "このマスにはゴールがあるため、壁にできません。先に「{button}」でゴールを別のマスに移してください。",
    startOnWall: "スタートは壁の上に置けません。空いているマスをクリックするか、先に「{button}」でこの壁を外してください。",
    startOnTarget: "スタートはゴールと同じマスに置けません。空いているマスをクリックしてください。",
    targetOnWall: "ゴールは壁の上に置けません。空いているマスをクリックするか、先に「{button}」でこの壁を外してください。",
    targetOnStart: "ゴールはスタートと同じマスに置けません。空いているマスをクリックしてください。",
    reached: "{steps} ステップでゴールに到達しました（最短経路：{best} ステップ）。",
    timeLimit: "時間切れです。{limit} ステップ歩いてもゴールに到達しませんでした（最短経路：{best} ステップ）。",
    timeLimitNoPath: "時間切れです。{limit} ステップ歩いてもゴールに到達しませんでした（スタートからの経路はありません）。",
    noLegalMove: "エージェントには可能な移動がありません。隣のマスはすべて壁かグリッドの外です。",
    noPath: "経路がありません。壁がスタートとゴールを隔てています。エージェントは上限の {limit} ステップまで歩き続けます。",
    progress: "ステップ {steps}（最大 {limit}）。スタートからの最短経路は {best} ステップです。"
  }
};

/**
 * The words of a page whose <html lang> is `lang`: "ja", "ja-JP", ... Japanese, anything else
 * English. Returns t(key, values), the message `key` with each {name} filled in from `values`
 * (an Error for a key the table lacks), with t.lang, "en" or "ja".
 */
function mazePlaygroundWords(lang) {
  var chosen = /^ja\b/i.test(lang || '') ? 'ja' : 'en', table = MAZE_PLAYGROUND_STRINGS[chosen];
  function t(key, values) {
    if (typeof table[key] !== 'string') throw new Error('playground: no words "' + key + '"');
    return table[key].replace(/\{(\w+)\}/g, function (m, name) { return String(values[name]); });
  }
  t.lang = chosen;
  return t;
}
