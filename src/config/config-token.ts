/** Injection token for the validated AppConfig (the configuration of the boot). */
export const APP_CONFIG = Symbol('APP_CONFIG');
