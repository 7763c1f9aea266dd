"""The view-stats service's loads, beside its handlers: the demo load of ``lambda-kit run``
(``demo``) and the fault soak of ``lambda-kit soak`` (``soak``), named in serverless.yml under
``custom.lambdaKit``. Neither is part of the wheel nor of the Lambda zip."""
