import { cookieValue, SsoSessions } from './sso-sessions';

describe('SsoSessions', () => {
  const actor = { kind: 'sso', subject: 'u1', role: 'viewer' } as const;

  it('finds a session by its signed cookie only, until it expires or is closed', () => {
    let now = 1_000;
    const sessions = new SsoSessions(60_000, () => now);
    const { cookie, csrf } = sessions.open(actor);
    expect(sessions.find(cookie)?.actor).toEqual(actor);
    expect(sessions.find(`${cookie.split('.')[0]}.forged`)).toBeUndefined();
    expect(sessions.find(cookie.split('.')[0])).toBeUndefined();
    expect(sessions.csrfMatches(sessions.find(cookie)!, csrf)).toBe(true);
    expect(sessions.csrfMatches(sessions.find(cookie)!, 'nope')).toBe(false);
    expect(sessions.csrfMatches(sessions.find(cookie)!, undefined)).toBe(false);
    now += 60_000;
    expect(sessions.find(cookie)).toBeUndefined();
    const second = sessions.open(actor);
    expect(sessions.close(second.cookie)).toBe(true);
    expect(sessions.find(second.cookie)).toBeUndefined();
  });

  it('does not accept a cookie signed by another process', () => {
    const a = new SsoSessions(60_000, () => 0);
    const b = new SsoSessions(60_000, () => 0);
    expect(b.find(a.open(actor).cookie)).toBeUndefined();
    expect(b.unsign(a.sign('x'))).toBeUndefined();
    expect(a.unsign(a.sign('x.y'))).toBe('x.y');
  });

  it('reads one cookie out of a Cookie header', () => {
    expect(cookieValue('a=1; switchboard_session=abc.def; b=2', 'switchboard_session')).toBe('abc.def');
    expect(cookieValue('a=1', 'switchboard_session')).toBeUndefined();
    expect(cookieValue(undefined, 'a')).toBeUndefined();
  });
});
