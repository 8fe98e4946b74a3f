package dev.paramserver.pserver;

import dev.paramserver.storage.Storage;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The pserver's access to its checkpoint directory, local or {@code s3://}. */
@Configuration(proxyBeanMethods = false)
class PserverStorageConfiguration {
  @Bean(destroyMethod = "close")
  Storage pserverStorage(PserverStorageProperties props) {
    return Storage.create(props.s3(), "paramserver.pserver.s3");
  }
}
