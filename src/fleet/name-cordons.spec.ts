import { NameCordons } from './name-cordons';

describe('NameCordons', () => {
  it('cordons a name per provider, collecting the drained connection ids', () => {
    const cordons = new NameCordons();
    const first = cordons.cordon('p', 'gpu-1', 'w-1', 'maintenance', 100);
    const again = cordons.cordon('p', 'gpu-1', 'w-2', 'other reason', 200);
    expect(again).toBe(first);
    expect(first).toMatchObject({ provider: 'p', name: 'gpu-1', since: 100, reason: 'maintenance' });
    expect([...first.workerIds]).toEqual(['w-1', 'w-2']);
    expect(cordons.of('p', 'gpu-1')).toBe(first);
    expect(cordons.of('q', 'gpu-1')).toBeUndefined();
    expect(cordons.ofWorkerId('w-2')).toBe(first);
    expect(cordons.ofWorkerId('w-3')).toBeUndefined();
  });

  it('lists the cordons of one provider or of all', () => {
    const cordons = new NameCordons();
    cordons.cordon('p', 'a', 'w-1', 'r', 1);
    cordons.cordon('p', 'b', 'w-2', 'r', 2);
    cordons.cordon('q', 'a', 'w-3', 'r', 3);
    expect(cordons.list('p').map((c) => c.name)).toEqual(['a', 'b']);
    expect(cordons.list('none')).toEqual([]);
    expect(cordons.list().map((c) => `${c.provider}/${c.name}`)).toEqual(['p/a', 'p/b', 'q/a']);
  });

  it('uncordon lifts a name and forgets its connection ids; false when it was not cordoned', () => {
    const cordons = new NameCordons();
    cordons.cordon('p', 'a', 'w-1', 'r', 1);
    expect(cordons.uncordon('p', 'b')).toBe(false);
    expect(cordons.uncordon('q', 'a')).toBe(false);
    expect(cordons.uncordon('p', 'a')).toBe(true);
    expect(cordons.uncordon('p', 'a')).toBe(false);
    expect(cordons.of('p', 'a')).toBeUndefined();
    expect(cordons.ofWorkerId('w-1')).toBeUndefined();
    expect(cordons.list()).toEqual([]);
  });

  it("clear drops a deleted provider's cordons only", () => {
    const cordons = new NameCordons();
    cordons.cordon('p', 'a', 'w-1', 'r', 1);
    cordons.cordon('p', 'b', 'w-2', 'r', 1);
    cordons.cordon('q', 'a', 'w-3', 'r', 1);
    cordons.clear('p');
    expect(cordons.list().map((c) => `${c.provider}/${c.name}`)).toEqual(['q/a']);
    expect(cordons.ofWorkerId('w-2')).toBeUndefined();
    expect(cordons.ofWorkerId('w-3')).toBeDefined();
  });
});
