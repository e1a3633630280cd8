// Paths of the intake's own API, served by every HTTP listener (a route may not take one).

export const INTAKE_API_PATHS = ['/jsons', '/plain', '/plain/batch', '/batch', '/array'];
