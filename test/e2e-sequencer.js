const Sequencer = require('@jest/test-sequencer').default;

/*
 * The e2e files that take longest go first, so that with two at a time (CI, own control planes) none of them starts
 * last and runs alone: a clean clone has no timing cache, and jest then orders by file size, which put the longest
 * (native-differential, a short file driving a long corpus) last: ~100 s of one idle worker. Seconds from CI's log,
 * two at a time; the rest follow in jest's own order.
 */
const LONGEST_FIRST = [
  'native-differential.e2e.ts', // 270 s
  'monitoring.e2e.ts', // 153 s
  'inforce-bad.e2e.ts', // 133 s
  'replicas.e2e.ts', // 116 s
  'native-edits.e2e.ts', // 107 s
  'native-replicas.e2e.ts', // 80 s
  'operator.e2e.ts', // 74 s
];

class LongestFirst extends Sequencer {
  async sort(tests) {
    const rank = (t) => {
      const i = LONGEST_FIRST.findIndex((name) => t.path.endsWith(`/${name}`));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    const ordered = await super.sort(tests);
    return [...ordered].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = LongestFirst;
