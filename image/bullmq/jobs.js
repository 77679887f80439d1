// BullMQ against kvstore (image/tests/bullmq.rs): a real job queue on
// kvstore, the way an application uses it.
//
//   node jobs.js PORT
//
// Adds 1,000 jobs to a queue, processes them with two Workers, makes every
// 10th job throw on its first attempt so that BullMQ retries it (attempts 3,
// a fixed 50 ms backoff), waits until every job has completed and checks:
// each job id completed exactly once (counted by the processors that
// returned), the retried jobs have attemptsMade 2 and the others 1, and the
// queue's counts are completed 1000, failed 0, a QueueEvents reader saw
// every completion and every retry, and the queue finds both workers by
// their connections' names. Prints one summary line
// ("bullmq: ...") and exits 0, or names the first mismatch (or the timeout)
// and exits 1.
'use strict';

const { Queue, Worker, QueueEvents } = require('bullmq');

const JOBS = 1000;
const FAIL_EVERY = 10;
const TIMEOUT_MS = 90_000;

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node jobs.js PORT (the port kvstore listens on)');
  process.exit(2);
}
const connection = { host: '127.0.0.1', port };
const queueName = 'faultline-jobs';

// Jobs that throw on their first attempt: every FAIL_EVERY-th one.
function failsFirst(n) {
  return n % FAIL_EVERY === 0;
}

function fail(message) {
  console.error(`bullmq: FAILED: ${message}`);
  process.exit(1);
}

// Ids the workers reported completed (after BullMQ moved them to the
// completed set), to know when to stop waiting and to say how far it got.
const reported = new Set();
let stage = 'connecting';

async function main() {
  const started = Date.now();
  const timer = setTimeout(
    () => fail(`timed out after ${TIMEOUT_MS / 1000} s while ${stage} (${reported.size} of ${JOBS} jobs completed)`),
    TIMEOUT_MS,
  );
  const queue = new Queue(queueName, { connection });
  queue.on('error', err => fail(`queue error: ${err.message}`));
  await queue.obliterate({ force: true });
  // The queue's event stream, read by a client of its own (XREAD BLOCK).
  const events = new QueueEvents(queueName, { connection });
  events.on('error', err => fail(`queue events error: ${err.message}`));
  const completedEvents = new Set();
  const retriedEvents = new Set();
  events.on('completed', ({ jobId }) => completedEvents.add(jobId));
  events.on('delayed', ({ jobId }) => retriedEvents.add(jobId));
  await events.waitUntilReady();

  // Completions per job id, counted where a processor returned.
  const completions = new Map();
  const processedBy = [0, 0];
  let thrown = 0;
  const processor = worker => async job => {
    if (failsFirst(job.data.n) && job.attemptsMade === 0) {
      thrown += 1;
      throw new Error(`job ${job.data.n} fails its first attempt on purpose`);
    }
    completions.set(job.id, (completions.get(job.id) || 0) + 1);
    processedBy[worker] += 1;
    return { n: job.data.n, square: job.data.n * job.data.n };
  };
  const workers = [0, 1].map(
    i => new Worker(queueName, processor(i), { connection, concurrency: 8 }),
  );
  const allDone = new Promise(resolve => {
    workers.forEach(w =>
      w.on('completed', job => {
        reported.add(job.id);
        if (reported.size === JOBS) resolve();
      }),
    );
  });
  workers.forEach((w, i) => w.on('error', err => fail(`worker ${i} error: ${err.message}`)));

  const jobs = [];
  for (let n = 1; n <= JOBS; n++) {
    jobs.push({
      name: 'square',
      data: { n },
      opts: { jobId: `job-${n}`, attempts: 3, backoff: { type: 'fixed', delay: 50 } },
    });
  }
  stage = 'adding jobs';
  const added = await queue.addBulk(jobs);
  stage = 'processing jobs';
  if (added.length !== JOBS) fail(`addBulk returned ${added.length} jobs, not ${JOBS}`);

  await allDone;
  // Both workers are known to the queue by their connections' names.
  const known = await queue.getWorkersCount();
  if (known < 2) fail(`getWorkers (CLIENT LIST) finds ${known} workers, not 2 or more`);
  stage = 'waiting for the completed events';
  while (completedEvents.size < JOBS) await new Promise(r => setTimeout(r, 20));
  stage = 'closing the workers';
  await Promise.all(workers.map(w => w.close()));
  stage = 'checking the jobs';

  // Every job completed exactly once.
  for (let n = 1; n <= JOBS; n++) {
    const id = `job-${n}`;
    const count = completions.get(id) || 0;
    if (count !== 1) fail(`${id} completed ${count} times, not once`);
  }
  const expectedThrows = Math.floor(JOBS / FAIL_EVERY);
  if (thrown !== expectedThrows) fail(`${thrown} first attempts threw, not ${expectedThrows}`);

  // What the queue recorded for each job.
  let retried = 0;
  for (let n = 1; n <= JOBS; n++) {
    const job = await queue.getJob(`job-${n}`);
    if (!job) fail(`job-${n} is missing from the queue`);
    const state = await job.getState();
    if (state !== 'completed') fail(`job-${n} is ${state}, not completed`);
    const attempts = failsFirst(n) ? 2 : 1;
    if (job.attemptsMade !== attempts) {
      fail(`job-${n} has attemptsMade ${job.attemptsMade}, not ${attempts}`);
    }
    if (!job.returnvalue || job.returnvalue.square !== n * n) {
      fail(`job-${n} returned ${JSON.stringify(job.returnvalue)}`);
    }
    if (attempts === 2) retried += 1;
  }
  const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed');
  if (counts.completed !== JOBS || counts.failed !== 0) {
    fail(`getJobCounts says ${JSON.stringify(counts)}, not completed ${JOBS} and failed 0`);
  }
  if (counts.waiting !== 0 || counts.active !== 0 || counts.delayed !== 0) {
    fail(`jobs left over: ${JSON.stringify(counts)}`);
  }
  if (processedBy[0] === 0 || processedBy[1] === 0) {
    fail(`one worker did all the work (${processedBy[0]} and ${processedBy[1]})`);
  }
  if (retriedEvents.size !== expectedThrows) {
    fail(`${retriedEvents.size} jobs had a delayed (retry) event, not ${expectedThrows}`);
  }
  await events.close();
  await queue.close();
  clearTimeout(timer);

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `bullmq: ${JOBS} jobs completed once each, ${retried} retried after a failure ` +
      `(attemptsMade 2), counts completed ${counts.completed} failed ${counts.failed}, ` +
      `workers ${processedBy[0]}+${processedBy[1]}, ${completedEvents.size} completed events, ${seconds} s`,
  );
}

main().catch(err => fail(err && err.stack ? err.stack : String(err)));
