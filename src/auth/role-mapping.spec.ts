import { claimValues, roleFor, ssoActor } from './role-mapping';

const config = { rolesClaim: 'groups', roles: { viewer: ['ops-view'], operator: ['ops-run'], admin: ['ops-admin'] } };

describe('SSO role mapping', () => {
  it('grants the highest role any claim value maps to, and none without a match', () => {
    expect(roleFor(config, { groups: ['ops-view'] })).toBe('viewer');
    expect(roleFor(config, { groups: ['ops-view', 'ops-admin', 'ops-run'] })).toBe('admin');
    expect(roleFor(config, { groups: 'ops-run' })).toBe('operator');
    expect(roleFor(config, { groups: ['other'] })).toBeUndefined();
    expect(roleFor(config, {})).toBeUndefined();
  });

  it('reads a dotted claim path (Keycloak realm roles) and ignores values that are not strings', () => {
    expect(claimValues({ realm_access: { roles: ['a', 1, 'b'] } }, 'realm_access.roles')).toEqual(['a', 'b']);
    expect(claimValues({ 'realm_access.roles': ['x'] }, 'realm_access.roles')).toEqual(['x']);
  });

  it('makes an SSO actor with the subject, a display name and the role; none without a subject or a role', () => {
    expect(ssoActor(config, { sub: 'u1', preferred_username: 'ann', groups: ['ops-run'] })).toEqual({
      kind: 'sso',
      subject: 'u1',
      name: 'ann',
      role: 'operator',
    });
    expect(ssoActor(config, { groups: ['ops-run'] })).toBeUndefined();
    expect(ssoActor(config, { sub: 'u1', groups: [] })).toBeUndefined();
  });
});
