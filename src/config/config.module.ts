import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';
import { APP_CONFIG } from './config-token';
import { ConfigReloadService } from './config-reload.service';
import { SighupReload } from './sighup-reload';

export { APP_CONFIG } from './config-token';

@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: APP_CONFIG, useValue: config }, ConfigReloadService, SighupReload],
      exports: [APP_CONFIG, ConfigReloadService],
    };
  }
}
