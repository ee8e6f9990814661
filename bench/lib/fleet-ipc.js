'use strict';

/** Resolves with the fleet's next IPC message of `type`; rejects on `failed`, exit or timeout. */
function fleetMessage(fleet, type, ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`timed out after ${ms / 1000} s waiting for the fleet (${type})`)), ms);
    const onMessage = (msg) => {
      if (msg.type === type) done(undefined, msg);
      else if (msg.type === 'failed') done(new Error(`fleet failed: ${msg.error}`));
    };
    const onExit = (code) => done(new Error(`fleet exited (${code}) while waiting for ${type}`));
    function done(err, msg) {
      clearTimeout(timer);
      fleet.off('message', onMessage);
      fleet.off('exit', onExit);
      if (err) reject(err);
      else resolve(msg);
    }
    fleet.on('message', onMessage);
    fleet.on('exit', onExit);
  });
}

module.exports = { fleetMessage };
