package dev.paramserver.service;

import org.springframework.beans.BeansException;
import org.springframework.beans.factory.config.BeanPostProcessor;

/** Runs {@link StartupCheck#check()} on each check bean as soon as it is created. */
final class StartupChecks implements BeanPostProcessor {
  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
    if (bean instanceof StartupCheck check) {
      check.check();
    }
    return bean;
  }
}
