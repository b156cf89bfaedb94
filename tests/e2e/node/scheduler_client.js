// Google's Node.js Cloud Scheduler client against the emulator, on its default gRPC transport
// and on its REST fallback: every job method, paging to the end, and the errors.
// Usage: node scheduler_client.js HOST:PORT grpc|rest
// Prints one JSON line with what it saw; tests/test_node_client.py checks it.
'use strict';

const {CloudSchedulerClient} = require('@google-cloud/scheduler');
const {grpc} = require('google-gax');
const {PassThroughClient} = require('google-auth-library');

const [address, transport] = process.argv.slice(2);
const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.split(':').pop())];

function makeClient() {
  if (transport === 'grpc') {
    // The default transport: plaintext gRPC, no credentials needed.
    return new CloudSchedulerClient({
      apiEndpoint: host,
      port,
      sslCreds: grpc.credentials.createInsecure(),
      authClient: new PassThroughClient(), // no credential lookup
    });
  }
  // The REST fallback: JSON over HTTP/1.1, no credentials sent.
  return new CloudSchedulerClient({
    fallback: true,
    apiEndpoint: host,
    port,
    protocol: 'http',
    authClient: new PassThroughClient(), // no credentials sent
  });
}

async function failure(promise) {
  try {
    await promise;
  } catch (err) {
    const violations = [];
    for (const detail of err.statusDetails || []) {
      for (const v of detail.fieldViolations || []) {
        violations.push([v.field, v.description]);
      }
    }
    // gRPC: err.details is the status message; REST fallback: err.message is.
    const message = typeof err.details === 'string' ? err.details : err.message;
    return {code: err.code, message, violations};
  }
  throw new Error('expected a failure');
}

async function main() {
  const client = makeClient();
  const parent = `projects/my-project/locations/us-central1`;
  const name = `${parent}/jobs/node-${transport}`;
  const job = {name, schedule: '0 2 * * *', httpTarget: {uri: 'http://127.0.0.1:9/run'}};
  const seen = {};
  const [created] = await client.createJob({parent, job});
  seen.created = created.name;
  seen.state = created.state;
  seen.got = (await client.getJob({name}))[0].schedule;
  for (let i = 0; i < 4; i++) {
    await client.createJob({parent, job: {...job, name: `${name}-${i}`}});
  }
  const listed = [];
  const pages = {autoPaginate: false};
  for await (const j of client.listJobsAsync({parent, pageSize: 2}, pages)) {
    listed.push(j.name);
  }
  seen.listed = listed;
  const [updated] = await client.updateJob({
    job: {name, schedule: '0 4 * * *', description: 'ignored'},
    updateMask: {paths: ['schedule']},
  });
  seen.updated = [updated.schedule, updated.description];
  seen.paused = (await client.pauseJob({name}))[0].state;
  seen.pausedAgain = await failure(client.pauseJob({name}));
  seen.resumed = (await client.resumeJob({name}))[0].state;
  seen.ran = (await client.runJob({name}))[0].name;
  await client.deleteJob({name});
  seen.notFound = await failure(client.getJob({name}));
  const dup = {...job, name: `${name}-0`};
  seen.alreadyExists = await failure(client.createJob({parent, job: dup}));
  seen.invalid = await failure(
    client.createJob({parent, job: {...job, name: `${name}-bad`, schedule: 'every banana'}}),
  );
  await client.close();
  process.stdout.write(JSON.stringify(seen) + '\n');
}

main().catch(err => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
