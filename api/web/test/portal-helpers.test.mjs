import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const sf = await load('src/people/secondFactor.ts');
const alt = await load('src/portal/alternatives.ts');
const top = await load('src/portal/topUp.ts');
const dl = await load('src/portal/deliveries.ts');

test('second factor: the secret is shown in groups of four', () => {
  assert.equal(sf.groupInFours('JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'), 'JBSW Y3DP EHPK 3PXP JBSW Y3DP EHPK 3PXP');
  assert.equal(sf.groupInFours('jbswy3dpehp'), 'JBSW Y3DP EHP');
  assert.equal(sf.groupInFours('JBSW Y3DP=='), 'JBSW Y3DP');
  assert.equal(sf.groupInFours(''), '');
});

test('second factor: the signed-in person among the users, by email in any case', () => {
  const users = [
    { id: '1', email: 'ada@example.com', state: 'REMOVED' },
    { id: '2', email: 'ada@example.com', state: 'ACTIVE' },
    { id: '3', email: 'bob@example.com', state: 'ACTIVE' },
  ];
  assert.equal(sf.findSelf(users, 'Ada@Example.com')?.id, '2');
  assert.equal(sf.findSelf(users, null), null);
  assert.equal(sf.findSelf(users, 'eve@example.com'), null);
});

test('second factor: recovery codes as a text file', () => {
  const text = sf.recoveryCodesText('ada@example.com', ['1a2b-3c4d-5e6f-7a8b', '0000-1111-2222-3333'], new Date('2026-05-03T14:05:09Z'));
  assert.match(text, /^neocloud recovery codes for ada@example.com\n/);
  assert.match(text, /Created 2026-05-03 14:05 UTC\./);
  assert.ok(text.includes('\n1a2b-3c4d-5e6f-7a8b\n0000-1111-2222-3333\n'));
  assert.equal(sf.recoveryCodesFileName('Ada+ops@Example.com'), 'neocloud-recovery-codes-ada-ops-example.com.txt');
  assert.ok(sf.isAppCode('123 456'));
  assert.ok(!sf.isAppCode('1a2b-3c4d-5e6f-7a8b'));
  assert.ok(!sf.isAppCode('12345'));
});

test('second factor: the account an otpauth URI names (the setup screen has no other email)', () => {
  const uri = 'otpauth://totp/neocloud%3Aada%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=neocloud&algorithm=SHA1&digits=6&period=30';
  assert.equal(sf.accountOfOtpauth(uri), 'ada@example.com');
  assert.equal(sf.accountOfOtpauth('otpauth://totp/ada%2Bops%40example.com?secret=X'), 'ada+ops@example.com');
  assert.equal(sf.accountOfOtpauth('otpauth://totp/neocloud:bob@example.com'), 'bob@example.com');
  assert.equal(sf.accountOfOtpauth('otpauth://totp/%E0%A4%A?secret=X'), '');
  assert.equal(sf.accountOfOtpauth('https://example.com/'), '');
  assert.equal(sf.accountOfOtpauth(''), '');
});

test('second factor: recovery codes without a known email', () => {
  const text = sf.recoveryCodesText('', ['1a2b-3c4d-5e6f-7a8b'], new Date('2026-05-03T14:05:09Z'));
  assert.match(text, /^neocloud recovery codes\n/);
  assert.equal(sf.recoveryCodesFileName(''), 'neocloud-recovery-codes.txt');
});

test('second factor: who still must set one up (invited or active, without one)', () => {
  const users = [
    { id: '1', state: 'ACTIVE', secondFactorSince: '2026-05-03T14:05:09Z' },
    { id: '2', state: 'ACTIVE', secondFactorSince: null },
    { id: '3', state: 'INVITED', secondFactorSince: null },
    { id: '4', state: 'REMOVED', secondFactorSince: null },
  ];
  assert.deepEqual(sf.withoutSecondFactor(users).map((u) => u.id), ['2', '3']);
  assert.deepEqual(sf.withoutSecondFactor([]), []);
});

test("second factor: requiring it takes one's own first (a person without one, while off)", () => {
  assert.equal(sf.ownSecondFactorFirst(false, { secondFactorSince: null }), true);
  assert.equal(sf.ownSecondFactorFirst(false, { secondFactorSince: '2026-05-03T14:05:09Z' }), false);
  // Already required: turning it off needs nothing; a key (no person) needs nothing.
  assert.equal(sf.ownSecondFactorFirst(true, { secondFactorSince: null }), false);
  assert.equal(sf.ownSecondFactorFirst(false, null), false);
});

test("second factor: what the requirement's switch says of who has none", () => {
  const marked = 'marked "No 2FA yet" above';
  assert.equal(sf.missingSecondFactorText(0, true, marked, 'the portal'), 'Everyone here has a second factor.');
  assert.equal(sf.missingSecondFactorText(1, false, marked, 'the portal'), '1 person has no second factor yet.');
  assert.equal(sf.missingSecondFactorText(3, false, marked, 'the portal'), '3 people have no second factor yet.');
  assert.equal(
    sf.missingSecondFactorText(2, true, marked, 'the portal'),
    '2 people have no second factor yet (marked "No 2FA yet" above): they must set one up before they can use the portal.',
  );
  assert.equal(
    sf.missingSecondFactorText(1, true, 'marked "Off" above', 'the console'),
    '1 person has no second factor yet (marked "Off" above): they must set one up before they can use the console.',
  );
});

test('alternatives: read from the error, malformed ones left out', () => {
  const parsed = alt.parseAlternatives([
    { sku: 's1', skuName: 'h100-eu-west', region: 'eu-west', gpuModel: 'H100', count: 4, reason: 'fewer units' },
    { sku: 's2', count: 0 },
    { skuName: 'no id', count: 2 },
    'nonsense',
    { sku: 's3', count: 8 },
  ]);
  assert.deepEqual(parsed, [
    { sku: 's1', skuName: 'h100-eu-west', region: 'eu-west', gpuModel: 'H100', count: 4, reason: 'fewer units' },
    { sku: 's3', skuName: 's3', region: null, gpuModel: null, count: 8, reason: null },
  ]);
  assert.deepEqual(alt.parseAlternatives(undefined), []);
  assert.deepEqual(alt.parseAlternatives({}), []);
});

test('alternatives: each one as a sentence with the order as asked', () => {
  const a = { sku: 's1', skuName: 'h100-eu-west', region: 'eu-west', gpuModel: 'H100', count: 4, reason: 'fewer units' };
  assert.equal(
    alt.describeAlternative(a, { cls: 'ON_DEMAND', level: 'NVLINK_DOMAIN', required: true, exclusive: false }),
    '4 × h100-eu-west (H100 in eu-west), on demand, in one NVLink domain — fewer units than you asked for',
  );
  assert.equal(
    alt.describeAlternative({ ...a, region: 'us-east', reason: 'other region' }, { cls: 'SPOT', level: 'NODE', required: false, exclusive: true }),
    '4 × h100-eu-west (H100 in us-east), spot, preferably on one node, exclusive — another region',
  );
  assert.equal(
    alt.describeAlternative({ sku: 'x', skuName: 'a100', region: null, gpuModel: null, count: 1, reason: 'something new' }, { cls: 'ON_DEMAND', level: '', required: true, exclusive: false }),
    '1 × a100, on demand — something new',
  );
  assert.equal(
    alt.describeAlternative({ ...a, reason: null }, { cls: 'ON_DEMAND', level: 'ANY', required: true, exclusive: false }),
    '4 × h100-eu-west (H100 in eu-west), on demand, anywhere in the region',
  );
});

test('top-up amounts: exact decimals from 1 to 1,000,000', () => {
  assert.deepEqual(top.checkTopUpAmount(' 250.50 ', 'USD'), { amount: '250.50' });
  assert.deepEqual(top.checkTopUpAmount('1', 'EUR'), { amount: '1' });
  assert.deepEqual(top.checkTopUpAmount('1000000.00', 'USD'), { amount: '1000000.00' });
  assert.ok('problem' in top.checkTopUpAmount('0.99', 'USD'));
  assert.ok('problem' in top.checkTopUpAmount('1000000.01', 'USD'));
  assert.ok('problem' in top.checkTopUpAmount('', 'USD'));
  assert.ok('problem' in top.checkTopUpAmount('1,000', 'USD'));
  assert.ok('problem' in top.checkTopUpAmount('-5', 'USD'));
  assert.ok('problem' in top.checkTopUpAmount('1e3', 'USD'));
  assert.ok('problem' in top.checkTopUpAmount('12.345', 'USD'));
  assert.deepEqual(top.checkTopUpAmount('12.345', 'KWD'), { amount: '12.345' });
  assert.match(top.checkTopUpAmount('500.5', 'JPY').problem, /no decimals/);
  // Far past a float's precision, still exact.
  assert.ok('problem' in top.checkTopUpAmount('1000000.000000000000000001', 'KWD'));
});

test('deliveries: the last attempt of an event, and "since" as an instant', () => {
  const attempts = [
    { eventId: 'e2', attempt: 1 },
    { eventId: 'e1', attempt: 3 },
    { eventId: 'e1', attempt: 2 },
  ];
  assert.equal(dl.lastAttemptOf(attempts, 'e1').attempt, 3);
  assert.equal(dl.lastAttemptOf(attempts, 'e9'), null);
  const now = new Date(2026, 4, 3, 14, 5);
  assert.equal(dl.toLocalInput(new Date(2026, 0, 2, 3, 4)), '2026-01-02T03:04');
  assert.deepEqual(dl.sinceInstant('2026-05-03T12:00', now), { since: new Date(2026, 4, 3, 12, 0).toISOString() });
  assert.ok('problem' in dl.sinceInstant('2026-05-03T15:00', now));
  assert.ok('problem' in dl.sinceInstant('', now));
  assert.ok('problem' in dl.sinceInstant('yesterday', now));
  assert.equal(dl.redeliveredNote(1, 'https://x'), '1 event queued again for https://x.');
  assert.equal(dl.redeliveredNote(3, 'https://x'), '3 events queued again for https://x.');
  assert.match(dl.redeliveredNote(0, 'https://x'), /nothing was queued/);
});
