// BullMQ throughput against one server (bench/kvstore.sh runs it against
// kvstore and against Redis in a Linux guest, alternately):
//
//   node throughput.js PORT [JOBS]
//
// Empties the queue, adds JOBS jobs (default 2,000) in bulk, and has two
// Workers (concurrency 8 each) process them; the time from the first add
// to the last completion gives jobs per second. Prints one line,
// "bullmq-throughput: JOBS jobs in S s = R jobs/s", and exits 0; any error,
// a job completed twice or missing, or a stall of 120 s exits 1.
'use strict';

const { Queue, Worker } = require('bullmq');

const TIMEOUT_MS = 120_000;

const port = Number(process.argv[2]);
const jobs = Number(process.argv[3] || 2000);
if (!Number.isInteger(port) || port <= 0 || port > 65535 || !Number.isInteger(jobs) || jobs <= 0) {
  console.error('usage: node throughput.js PORT [JOBS]');
  process.exit(2);
}
const connection = { host: '127.0.0.1', port };
const queueName = 'faultline-throughput';

function fail(message) {
  console.error(`bullmq-throughput: FAILED: ${message}`);
  process.exit(1);
}

async function main() {
  const timer = setTimeout(() => fail(`stalled for ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS);
  const queue = new Queue(queueName, { connection });
  queue.on('error', err => fail(`queue error: ${err.message}`));
  await queue.obliterate({ force: true });

  const completed = new Set();
  let finish;
  const allDone = new Promise(resolve => (finish = resolve));
  const workers = [0, 1].map(() => {
    const w = new Worker(queueName, async job => job.data.n * 2, { connection, concurrency: 8 });
    w.on('error', err => fail(`worker error: ${err.message}`));
    w.on('completed', job => {
      if (completed.has(job.id)) fail(`${job.id} completed twice`);
      completed.add(job.id);
      if (completed.size === jobs) finish();
    });
    return w;
  });
  await Promise.all(workers.map(w => w.waitUntilReady()));

  const started = process.hrtime.bigint();
  const batch = [];
  for (let n = 1; n <= jobs; n++) batch.push({ name: 'double', data: { n } });
  await queue.addBulk(batch);
  await allDone;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;

  await Promise.all(workers.map(w => w.close()));
  const counts = await queue.getJobCounts('completed', 'failed');
  if (counts.completed !== jobs || counts.failed !== 0) {
    fail(`counts ${JSON.stringify(counts)}, not completed ${jobs} and failed 0`);
  }
  await queue.obliterate({ force: true });
  await queue.close();
  clearTimeout(timer);
  console.log(
    `bullmq-throughput: ${jobs} jobs in ${seconds.toFixed(2)} s = ${(jobs / seconds).toFixed(0)} jobs/s`,
  );
}

main().catch(err => fail(err && err.stack ? err.stack : String(err)));
