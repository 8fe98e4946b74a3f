package dev.paramserver.trainer.training;

import dev.paramserver.coordination.Lease;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.pserver.ParameterClient;

/**
 * What a training session works with once set up.
 *
 * @param spec the model's shape
 * @param model the model
 * @param values this trainer's copy of the parameters (pulled from the pservers)
 * @param client the pservers' client
 * @param testSet the test examples (empty: no evaluation)
 * @param lease this trainer's etcd lease
 */
record TrainingContext(
    ModelSpec spec,
    Model model,
    Parameters values,
    ParameterClient client,
    Dataset testSet,
    Lease lease) {}
